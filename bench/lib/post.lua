-- POSTs the file at WRK_BODY with the headers in WRK_HEADERS ("name: value" lines); prints
-- one JSON line: counts and errors. (wrk's latency histogram at c=1 disagreed with its own
-- request count on these machines, so latency comes from bench/lib/serial.ts instead.)
local f = assert(io.open(os.getenv("WRK_BODY"), "rb"))
wrk.method = os.getenv("WRK_METHOD") or "POST"
wrk.body = f:read("*a")
f:close()
for line in (os.getenv("WRK_HEADERS") or ""):gmatch("[^\n]+") do
  local name, value = line:match("^([^:]+):%s*(.*)$")
  if name then wrk.headers[name] = value end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCH_JSON {"requests":%d,"durationUs":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout))
end
