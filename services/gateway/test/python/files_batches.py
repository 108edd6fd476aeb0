"""The official Python SDK's files and batches methods against one base URL; prints what they return.

Ids and times differ between runs; everything else is printed for the test to compare.
"""
import json
import os
import sys
import time

import anthropic

client = anthropic.Anthropic(
    base_url=os.environ["BASE_URL"],
    api_key=os.environ["API_KEY"],
    default_headers={"x-api-key": os.environ["API_KEY"]},
    max_retries=0,
)
out = {}
BETA = ["files-api-2025-04-14"]
data = bytes((i * 7) % 251 for i in range(30_000))

up = client.beta.files.upload(file=("report.pdf", data, "application/pdf"), betas=BETA)
out["upload"] = {k: v for k, v in up.model_dump().items() if k not in ("id", "created_at")}
meta = client.beta.files.retrieve_metadata(up.id, betas=BETA)
out["metadata_same"] = meta.model_dump() == up.model_dump()
out["listed"] = up.id in [f.id for f in client.beta.files.list(betas=BETA).data]
out["download_same"] = client.beta.files.download(up.id, betas=BETA).read() == data
out["delete"] = client.beta.files.delete(up.id, betas=BETA).type
try:
    client.beta.files.retrieve_metadata(up.id, betas=BETA)
    out["after_delete"] = "found"
except anthropic.NotFoundError as e:
    out["after_delete"] = e.status_code

requests = [
    {"custom_id": f"py-{i}", "params": {"model": "claude-haiku-4-5", "max_tokens": 32,
     "messages": [{"role": "user", "content": f"Summarise part {i}."}]}}
    for i in range(2)
]
batch = client.messages.batches.create(requests=requests)
out["created"] = {"status": batch.processing_status, "counts": batch.request_counts.model_dump()}
while batch.processing_status != "ended":
    time.sleep(0.1)
    batch = client.messages.batches.retrieve(batch.id)
out["results_url_host"] = batch.results_url.split("/v1/")[0] == os.environ["BASE_URL"]
out["listed_batch"] = batch.id in [b.id for b in client.messages.batches.list().data]
out["results"] = [
    {"custom_id": r.custom_id, "type": r.result.type, "text": r.result.message.content[0].text,
     "usage": r.result.message.usage.model_dump()}
    for r in client.messages.batches.results(batch.id)
]
out["deleted"] = client.messages.batches.delete(batch.id).type
other = client.messages.batches.create(requests=requests)
out["canceled"] = client.messages.batches.cancel(other.id).processing_status
json.dump(out, sys.stdout, sort_keys=True)
