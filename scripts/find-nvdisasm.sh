#!/usr/bin/env bash
# Prints the path of an nvdisasm (PATH, the CUDA toolkit, or PyPI's
# nvidia-cuda-nvdisasm package), or nothing.
for candidate in "${PTXFORGE_NVDISASM:-}" "$(command -v nvdisasm 2>/dev/null)" /usr/local/cuda/bin/nvdisasm; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then echo "$candidate"; exit 0; fi
done
python3 - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit(0)
for root in list(nvidia.__path__):
    for path in sorted(glob.glob(os.path.join(root, "cu*", "bin", "nvdisasm"))):
        if os.access(path, os.X_OK):
            print(path)
            raise SystemExit(0)
PY
