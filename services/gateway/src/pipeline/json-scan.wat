;; The bounds scan of a JSON request body (json-bounds.ts), as WebAssembly: nesting depth, the
;; number of values, and where the long strings lie, one window of the body at a time.
;;
;; Inside a string, 16 bytes are compared at once (SIMD) for the only two bytes that matter
;; there, a quote and a backslash; a Claude Code body is 90-95% strings (tool results, system
;; prompts), so nearly all of it is skipped 16 bytes a step. Between strings each byte is looked
;; at. A backslash makes the byte after it part of the string, so an escaped quote never ends one.
;;
;; It also notes where each array or object at the top level's members starts and ends (the
;; values a reader may leave unparsed, json-body.ts): the offset of its opening bracket, and of its
;; closing one as -1 - offset, in the order met; past TOP_CAP in one window it stops noting them
;; and says so (overflow), and the reader then parses everything.
;;
;; Memory: the window at 0 (WINDOW bytes), then the long strings found in it (pairs of i32:
;; start and end offsets in the whole body, between the quotes; at most OUT_PAIRS), then the
;; top-level brackets met in it (TOP_CAP i32), then the scan's state, which the caller saves after
;; each window and puts back before the next, so two bodies can be scanned in turns. Rebuilt into
;; json-scan-wasm.ts by scripts/build-wasm.mjs.
(module
  (memory (export "memory") 5)
  ;; WINDOW = 262144, OUT = WINDOW, OUT_PAIRS = 4096 (32 KB), TOP = OUT + 32768 = 294912,
  ;; TOP_CAP = 64 (256 bytes), STATE = TOP + 256 = 295168
  (global $OUT i32 (i32.const 262144))
  (global $TOP i32 (i32.const 294912))
  (global $TOP_CAP i32 (i32.const 64))
  (global $STATE i32 (i32.const 295168))

  ;; scan(len, base, minLength, maxDepth, maxValues) -> 0 fine, 1 nested too deep, 2 too many values.
  ;; `len` bytes of the window are scanned; `base` is the window's offset in the body.
  ;; State (i32 at STATE): 0 depth, 4 values, 8 in a string, 12 the next byte is escaped,
  ;; 16 where the open string's content starts, 20 top-level brackets overflowed; then what this
  ;; window found: 24 long strings, 28 top-level brackets.
  (func (export "scan")
    (param $len i32) (param $base i32) (param $min i32) (param $maxDepth i32) (param $maxValues i32)
    (result i32)
    (local $pos i32) (local $b i32) (local $m i32) (local $v v128)
    (local $depth i32) (local $values i32) (local $inString i32) (local $start i32) (local $found i32)
    (local $result i32) (local $top i32) (local $overflow i32)
    (local.set $depth (i32.load (global.get $STATE)))
    (local.set $values (i32.load offset=4 (global.get $STATE)))
    (local.set $inString (i32.load offset=8 (global.get $STATE)))
    (local.set $pos (i32.load offset=12 (global.get $STATE)))
    (local.set $start (i32.load offset=16 (global.get $STATE)))
    (local.set $overflow (i32.load offset=20 (global.get $STATE)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $pos) (local.get $len)))
        (if (local.get $inString)
          (then
            ;; 16 bytes at a time, to the first quote or backslash
            (block $tail
              (loop $blocks
                (br_if $tail (i32.gt_u (i32.add (local.get $pos) (i32.const 16)) (local.get $len)))
                (local.set $v (v128.load (local.get $pos)))
                (local.set $m
                  (i8x16.bitmask
                    (v128.or
                      (i8x16.eq (local.get $v) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34))
                      (i8x16.eq (local.get $v) (v128.const i8x16 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92)))))
                (if (local.get $m)
                  (then
                    (local.set $pos (i32.add (local.get $pos) (i32.ctz (local.get $m))))
                    (br $tail)))
                (local.set $pos (i32.add (local.get $pos) (i32.const 16)))
                (br $blocks)))
            ;; byte by byte from there: the hit, or the window's last bytes
            (block $hit
              (loop $bytes
                (br_if $done (i32.ge_u (local.get $pos) (local.get $len)))
                (local.set $b (i32.load8_u (local.get $pos)))
                (br_if $hit (i32.eq (local.get $b) (i32.const 34)))
                (br_if $hit (i32.eq (local.get $b) (i32.const 92)))
                (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
                (br $bytes)))
            (if (i32.eq (local.get $b) (i32.const 92))
              (then
                ;; the escaped byte may be the next window's first
                (local.set $pos (i32.add (local.get $pos) (i32.const 2)))
                (br $next)))
            ;; the closing quote
            (if (i32.ge_u (i32.sub (i32.add (local.get $base) (local.get $pos)) (local.get $start)) (local.get $min))
              (then
                (i32.store
                  (i32.add (global.get $OUT) (i32.shl (local.get $found) (i32.const 3)))
                  (local.get $start))
                (i32.store offset=4
                  (i32.add (global.get $OUT) (i32.shl (local.get $found) (i32.const 3)))
                  (i32.add (local.get $base) (local.get $pos)))
                (local.set $found (i32.add (local.get $found) (i32.const 1)))))
            (local.set $inString (i32.const 0))
            (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
            (br $next)))
        ;; between strings
        (local.set $b (i32.load8_u (local.get $pos)))
        (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
        (if (i32.eq (local.get $b) (i32.const 34))
          (then
            (local.set $inString (i32.const 1))
            (local.set $start (i32.add (local.get $base) (local.get $pos)))
            (br $next)))
        ;; [ and { (0x5b, 0x7b: they differ only in bit 0x20), ] and } (0x5d, 0x7d)
        (local.set $m (i32.or (local.get $b) (i32.const 32)))
        (if (i32.eq (local.get $m) (i32.const 123))
          (then
            (local.set $depth (i32.add (local.get $depth) (i32.const 1)))
            (if (i32.gt_s (local.get $depth) (local.get $maxDepth))
              (then (local.set $result (i32.const 1)) (br $done)))
            (local.set $values (i32.add (local.get $values) (i32.const 1)))
            (if (i32.gt_s (local.get $values) (local.get $maxValues))
              (then (local.set $result (i32.const 2)) (br $done)))
            (if (i32.eq (local.get $depth) (i32.const 2))
              (then (call $noteTop (local.get $top) (i32.sub (i32.add (local.get $base) (local.get $pos)) (i32.const 1)))
                (local.set $overflow (i32.or (local.get $overflow) (i32.ge_u (local.get $top) (global.get $TOP_CAP))))
                (local.set $top (i32.add (local.get $top) (i32.const 1)))))
            (br $next)))
        (if (i32.eq (local.get $m) (i32.const 125))
          (then
            (local.set $depth (i32.sub (local.get $depth) (i32.const 1)))
            (if (i32.eq (local.get $depth) (i32.const 1))
              (then (call $noteTop (local.get $top) (i32.sub (i32.const 0) (i32.add (local.get $base) (local.get $pos))))
                (local.set $overflow (i32.or (local.get $overflow) (i32.ge_u (local.get $top) (global.get $TOP_CAP))))
                (local.set $top (i32.add (local.get $top) (i32.const 1)))))
            (br $next)))
        (if (i32.eq (local.get $b) (i32.const 44))
          (then
            (local.set $values (i32.add (local.get $values) (i32.const 1)))
            (if (i32.gt_s (local.get $values) (local.get $maxValues))
              (then (local.set $result (i32.const 2)) (br $done)))))
        (br $next)))
    ;; What carries over: `pos` past the window is the escaped byte starting the next one.
    (i32.store (global.get $STATE) (local.get $depth))
    (i32.store offset=4 (global.get $STATE) (local.get $values))
    (i32.store offset=8 (global.get $STATE) (local.get $inString))
    (i32.store offset=12 (global.get $STATE) (i32.sub (local.get $pos) (local.get $len)))
    (i32.store offset=16 (global.get $STATE) (local.get $start))
    (i32.store offset=20 (global.get $STATE) (local.get $overflow))
    (i32.store offset=24 (global.get $STATE) (local.get $found))
    (i32.store offset=28 (global.get $STATE)
      (select (local.get $top) (global.get $TOP_CAP) (i32.lt_u (local.get $top) (global.get $TOP_CAP))))
    (local.get $result))

  ;; The top-level bracket `at` (or -1 - its offset), as the window's `n`th: dropped past TOP_CAP.
  (func $noteTop (param $n i32) (param $at i32)
    (if (i32.lt_u (local.get $n) (global.get $TOP_CAP))
      (then (i32.store (i32.add (global.get $TOP) (i32.shl (local.get $n) (i32.const 2))) (local.get $at))))))
