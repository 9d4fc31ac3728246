#!/usr/bin/env bash
# minigluon's checks on a machine with an NVIDIA GPU and CuPy, in one go, every log kept.
#
#   tools/gpu_check.sh [env] [tests] [bench] [profile]      (no argument: all four)
#
# env      the GPU, the driver, and the versions of Python, numpy, CuPy, pyzmq, PyTorch
# tests    the suite's gpu0 variants and tests/test_gpu.py, with a per-test timeout;
#          GPU_CHECK_PYTEST holds extra pytest arguments (default -x: stop at the first
#          failure); with pytest-xdist installed, GPU_CHECK_WORKERS processes share the GPU
# bench    benchmarks/bench_resnet.py --gpus 1 --compare-torch: batch 128 and 512; float32,
#          float32 with TF32 matrix products, and float16 with float32 master weights
#          (GPU_CHECK_BATCHES, GPU_CHECK_MODES, GPU_CHECK_REPEAT choose others)
# profile  the same benchmark's per-layer breakdown of one minigluon step
#
# Logs go to $OUT (default gpu_check_logs/). CuPy compiles each kernel once and caches it
# in $CUPY_CACHE_DIR (default .gpu_cache/cupy); keep that folder between runs to skip
# the compiling. Each phase runs under a time limit (GPU_CHECK_TESTS_S, GPU_CHECK_BENCH_S)
# so that a hang costs minutes, not the machine.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu_check_logs}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.gpu_cache/cupy}
mkdir -p "$CUPY_CACHE_DIR"
phases=${*:-env tests bench profile}
status=0

run_env() {
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    "$PY" - <<'EOF'
import platform, numpy
print('python', platform.python_version(), 'numpy', numpy.__version__)
for name in ('cupy', 'zmq', 'torch', 'numba', 'pytest', 'xdist'):
    try:
        module = __import__(name)
        print(name, getattr(module, '__version__', '?'))
    except Exception as exc:
        print(name, 'MISSING', type(exc).__name__, exc)
import minigluon as mx
print('minigluon sees', mx.num_gpus(), 'GPU(s)')
import cupy
print('CUDA runtime', cupy.cuda.runtime.runtimeGetVersion(), 'driver',
      cupy.cuda.runtime.driverGetVersion(), 'device', cupy.cuda.Device(0).compute_capability)
EOF
}

run_tests() {
    local parallel=()
    if "$PY" -c 'import xdist' 2>/dev/null; then
        parallel=(-n "${GPU_CHECK_WORKERS:-8}")
    fi
    # shellcheck disable=SC2086
    timeout "${GPU_CHECK_TESTS_S:-300}" "$PY" -m pytest tests -k 'gpu0 or test_gpu' \
        -p no:cacheprovider -q --timeout "${GPU_CHECK_TEST_TIMEOUT_S:-120}" \
        "${parallel[@]}" ${GPU_CHECK_PYTEST:--x} --junitxml "$OUT/tests.xml" 2>&1 \
        | tee "$OUT/tests.log"
    return "${PIPESTATUS[0]}"
}

run_bench() {
    local batch mode flags
    for mode in ${GPU_CHECK_MODES:-float32 tf32 float16}; do
        case $mode in
            tf32) flags=(--dtype float32 --tf32) ;;
            *) flags=(--dtype "$mode") ;;
        esac
        for batch in ${GPU_CHECK_BATCHES:-128 512}; do
            timeout "${GPU_CHECK_BENCH_S:-120}" "$PY" benchmarks/bench_resnet.py --gpus 1 \
                --compare-torch --batch-size "$batch" "${flags[@]}" --steps 20 --warmup 3 \
                --repeat "${GPU_CHECK_REPEAT:-2}" 2>&1 | tee -a "$OUT/bench.log" || status=1
        done
    done
}

run_profile() {
    timeout "${GPU_CHECK_BENCH_S:-120}" "$PY" benchmarks/bench_resnet.py --gpus 1 \
        --batch-size "${GPU_CHECK_PROFILE_BATCH:-128}" --steps 5 --warmup 2 --profile 2>&1 \
        | tee "$OUT/profile.log"
}

for phase in $phases; do
    echo "=== $phase ($(date +%T))" | tee -a "$OUT/phases.log"
    if [ "$phase" = env ]; then
        run_env 2>&1 | tee "$OUT/env.log"
    else
        "run_$phase" || status=1
    fi
done
# The compiled kernels, for the next run's CUPY_CACHE_DIR (a few MB).
tar -czf "$OUT/cupy_kernel_cache.tgz" -C "$CUPY_CACHE_DIR" . 2>/dev/null
echo "=== done ($(date +%T)), status $status" | tee -a "$OUT/phases.log"
exit $status
