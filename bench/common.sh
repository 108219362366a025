# Shared by the CPU benchmarks (source it): the model and sizes they time
# (overridable from the environment), JAX in a venv in the build directory
# on first use, and a megabyte of random bytes as training data (the JAX
# side trains on random tokens too).
#   bench_setup BUILD OUT   -> sets VENV, writes OUT/data.bin
CONFIG=bench/gpt-bench.json
BATCH=${BATCH:-8}
SEQ=${SEQ:-256}
STEPS=${STEPS:-5}
bench_setup() {
  VENV="$1/bench-venv"
  mkdir -p "$2"
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import jax" 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q jax
  fi
  python3 -c "import os; open('$2/data.bin','wb').write(os.urandom(1 << 20))"
}
