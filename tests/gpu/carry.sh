# Sourced by the tests/gpu scripts (from the repository root): what every GPU-machine run
# needs before it can start builder there.
#  - The wheels the GPU machine lacks (jsonschema, ruamel.yaml, conan, …; it reaches no
#    registry), carried in .whl/ and installed into /tmp/site, e.g. on the dev machine:
#      pip download -d .whl --only-binary :all: --python-version 3.12 \
#        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
#        jsonschema ruamel.yaml conan
#  - This checkout on PYTHONPATH (builder runs from it), unbuffered output.
#  - use_distro_cxx: the machine's default compiler (/opt/gcc) has no shared libstdc++,
#    which builder refuses for recipes with system C++ libraries and which links a private
#    copy into extensions; the distribution's compiler replaces it.
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/site/bin:$PATH
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1

use_distro_cxx() {
  case "$("${CXX:-g++}" -print-file-name=libstdc++.so 2>/dev/null)" in
    /*) ;;
    *) if [ -x /usr/bin/g++ ]; then
         echo "note: ${CXX:-g++} has no shared libstdc++; building with /usr/bin/g++"
         export CC=/usr/bin/gcc CXX=/usr/bin/g++ CUDAHOSTCXX=/usr/bin/g++
       fi;;
  esac
}
