# Shared by the CPU benchmarks (source it): the model and sizes they time
# (overridable from the environment), JAX in a venv in the build directory
# on first use, and a megabyte of random bytes as training data (the JAX
# side trains on random tokens too).
#   bench_setup BUILD OUT   -> sets VENV, writes OUT/data.bin
CONFIG=bench/gpt-bench.json
BATCH=${BATCH:-8}
SEQ=${SEQ:-256}
STEPS=${STEPS:-5}
# weft_bench PLAN NPROC THREADS LABEL [FLAGS]: compiles $CONFIG at $BATCH x
# $SEQ (with --plan PLAN unless empty, and weftc compile FLAGS such as
# "--dtype bf16") into $OUT/bundle-LABEL and trains it for
# $STEPS + 2 steps on NPROC ranks of THREADS OpenBLAS threads, metrics in
# $OUT/LABEL.jsonl (the first two steps are warm-up).
weft_bench() {
  local bundle="$OUT/bundle-$4"
  "$BUILD/bin/weftc" compile --config "$CONFIG" --batch "$BATCH" --seq "$SEQ" \
    ${1:+--plan $1} ${5:-} -o "$bundle" 2>/dev/null
  rm -f "$OUT/$4.jsonl"
  OPENBLAS_NUM_THREADS=$3 "$BUILD/bin/weft-run" --nproc "$2" "$bundle" \
    --data "$OUT/data.bin" --tokenizer bytes --steps $((STEPS + 2)) \
    --metrics "$OUT/$4.jsonl" 2>/dev/null
}
bench_setup() {
  VENV="$1/bench-venv"
  mkdir -p "$2"
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import jax" 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q jax
  fi
  python3 -c "import os; open('$2/data.bin','wb').write(os.urandom(1 << 20))"
}
