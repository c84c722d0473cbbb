#!/usr/bin/env bash
# The one command of a session lent the GPU machine (benchmarks/gpu.py's docstring says more):
#
#     run(command="bash benchmarks/gpu_device.sh", carry=[".whl", ".gpu-data"], timeout_s=600)
#
# It installs the carried wheels (.whl/*.whl, into /tmp/site) where the image lacks them,
# builds the C kernels, then at once: PyG's neighbour sampler, the graphs and their
# partitions, and the tests marked gpu (make test-gpu's pytest line); then benchmarks/gpu.py
# with the time left (its GraphSAGE parts wait for the sampler's build if it is still going). It ends within GPU_DEVICE_LIMIT_S (default 570 s) of its start and
# leaves in $OUT: gpu.json (the record), gpu.log (gpu.py's lines), tests.log, setup.log and
# logs.tar.gz (every run's own output). Arguments are passed to gpu.py (here without a GPU:
# `PY=.venv/bin/python OUT=/tmp/o bash benchmarks/gpu_device.sh --dry_run`).
set -u
T0=$(date +%s)
LIMIT=${GPU_DEVICE_LIMIT_S:-570}
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/bench-out/gpu-device}
mkdir -p "$OUT"
WORK=${GPU_BENCH_WORKDIR:-/tmp/distgraph-gpu-bench}
mkdir -p "$WORK"
PY=${PY:-python3}
if ! "$PY" -c "import torch" 2>/dev/null && [ -x /opt/torch/.venv/bin/python3 ]; then PY=/opt/torch/.venv/bin/python3; fi
export OMP_NUM_THREADS=1
left() { echo $((LIMIT - ($(date +%s) - T0))); }
TEST_LIMIT=${GPU_TEST_LIMIT_S:-120}

{
    echo "setup: $(date -Is), $(getconf _NPROCESSORS_ONLN) cores, $PY"
    nvidia-smi -L 2>&1 || echo "no nvidia-smi"
    "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
    if ! "$PY" -c "import zmq, pymetis, kaminpar" 2>/dev/null; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
        export PYTHONPATH=/tmp/site
    fi
    export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
    echo "PYTHONPATH=$PYTHONPATH"
    t=$(date +%s)
    "$PY" setup.py -q build_ext --inplace 2>&1 | tail -5
    echo "C kernels: $(ls src/distgraph/native/ | grep -c '\.so$') built in $(($(date +%s) - t)) s"
} > "$OUT/setup.log" 2>&1  # a block, not a subshell: its PYTHONPATH holds from here on

# at once: the tests (GPU; few cores), the graphs and partitions, PyG's sampler (CPU)
t=$(date +%s)
(timeout "$TEST_LIMIT" "$PY" -m pytest -q -rs -m gpu tests --ignore=tests/cluster -p no:cacheprovider \
    > "$OUT/tests.log" 2>&1; echo "pytest exit $? (5: no test marked gpu; 124: cut at ${TEST_LIMIT} s)" \
    >> "$OUT/tests.log") &
TESTS=$!
"$PY" benchmarks/gpu.py --workdir "$WORK" --prepare_only pyg_sampler "$@" > "$WORK/prepare_sampler.log" 2>&1 &
S1=$!
"$PY" benchmarks/gpu.py --workdir "$WORK" --prepare_only 200k "$@" > "$WORK/prepare_200k.log" 2>&1 &
S2=$!
"$PY" benchmarks/gpu.py --workdir "$WORK" --prepare_only 10M "$@" > "$WORK/prepare_10M.log" 2>&1 &
S3=$!
for p in $S2 $S3; do wait $p || echo "a preparation failed (pid $p): see logs.tar.gz" >> "$OUT/setup.log"; done
echo "graphs and partitions took $(($(date +%s) - t)) s (PyG's sampler builds on: gpu.py waits for it)" \
    >> "$OUT/setup.log"
wait $TESTS
echo "preparation and tests took $(($(date +%s) - t)) s; $(left) s left" >> "$OUT/setup.log"
cat "$WORK"/prepare_*.log >> "$OUT/setup.log" 2>/dev/null

# the benchmark with the time left, less 25 s to stop a part cut short and pack the logs
BUDGET=$(($(left) - 25))
timeout $((BUDGET + 15)) "$PY" benchmarks/gpu.py --workdir "$WORK" --out "$OUT" --budget_s "$BUDGET" "$@" \
    > "$OUT/gpu.log" 2>&1
echo "gpu.py exit $? after $(($(date +%s) - T0)) s in all" >> "$OUT/gpu.log"
(cd "$WORK" && find . -name '*.log' -size -4M | tar -czf "$OUT/logs.tar.gz" -T -) 2>/dev/null
ls -la "$OUT"
