# Source on a lent GPU machine after the device-kit install (docs/benchmarks/README.md):
#   . tools/bench/device_env.sh
# puts the carried wheels and every UniLab src/ folder on PYTHONPATH.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PYTHONPATH=/tmp/site:$(ls -d "$root"/packages/*/src | paste -sd:):$root/integration/src${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
