#!/usr/bin/env bash
# Runs on the GPU machine, in the device call right after scripts/vulkan_run.sh's (the machine
# still warm: the wheel installed in /tmp/site, the loader unpacked, the model's first part
# kept in /tmp/gpum1 — the working tree is sent afresh each call, /tmp stays):
# all-MiniLM-L6-v2 through `nbx embed --device vulkan` against the sentence-transformers
# reference in the project's test data (cosine >= 0.99999, |diff| <= 1e-4), carrying .gpum2.
# The model travels in two parts (.gpum1/ with the first call, .gpum2/ with this one) because
# one call carries at most 64 MiB; scripts/vulkan_gpu.sh makes them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
logs="${OUT:-$root/.gpuw/logs}"
mkdir -p "$logs"
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES="$icd"
export XDG_RUNTIME_DIR=/tmp PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
[ -d /tmp/gpum1 ] || { echo "no /tmp/gpum1: the first call's part is gone (the machine went back); run both calls again"; exit 2; }
rm -rf /tmp/minilm && mkdir -p /tmp/minilm
cat /tmp/gpum1/part.* .gpum2/part.* | xz -d | tar -x -C /tmp/minilm
python3 - "$logs" <<'PY'
import json, subprocess, sys, time
from pathlib import Path
import numpy as np
logs = Path(sys.argv[1])
data = json.loads(Path("crates/nbxtensor-models/tests/data/minilm_public.json").read_text())
texts, want = data["sentences"], np.asarray(data["embeddings"], dtype=np.float64)
Path("/tmp/texts.json").write_text(json.dumps(texts))
for batch in (len(texts), 1):
    start = time.perf_counter()
    command = [sys.executable, "-c", "from nbxtensor._cli import main; main()", "embed", "--model", "/tmp/minilm/model",
               "--input", "/tmp/texts.json", "--output", "/tmp/out.json", "--device", "vulkan", "--batch", str(batch)]
    subprocess.run(command, check=True)
    got = np.asarray(json.loads(Path("/tmp/out.json").read_text()), dtype=np.float64)
    cosine = (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    diff = np.abs(got - want).max()
    line = f"MiniLM --device vulkan, batch {batch}: {len(texts)} sentences, min cosine {cosine.min():.9f}, max |diff| {diff:.3e}, {time.perf_counter() - start:.1f} s"
    print(line)
    (logs / "minilm.log").open("a").write(line + "\n")
    assert cosine.min() >= 0.99999 and diff <= 1e-4, line
PY
