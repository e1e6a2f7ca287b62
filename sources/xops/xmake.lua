-- xops: a C library of tensor ops with a ctypes Python package, built the way LLAISYS
-- upstream builds: `xmake f --nv_gpu=y -m release && xmake && xmake install -o <dir>`.
-- Like upstream, it installs only the library: its headers and Python package are
-- collected by the recipe (install.files).
set_project("xops")
set_version("0.1.0")
set_languages("c++17")
add_rules("mode.debug", "mode.release")

option("nv_gpu")
    set_default(false)
    set_showmenu(true)
    set_description("Build the NVIDIA (CUDA) kernels")
option_end()

option("cuda_archs")
    set_default("80")
    set_showmenu(true)
    set_description("CUDA archs, ';'-separated (80;90)")
option_end()

target("xops")
    set_kind("shared")
    add_includedirs("include")
    add_files("src/*.cpp", "src/cpu/*.cpp")
    if has_config("nv_gpu") then
        add_defines("XOPS_NVIDIA")
        add_files("src/nvidia/*.cu")
        for _, arch in ipairs(get_config("cuda_archs"):split(";")) do
            add_cugencodes("sm_" .. arch)
        end
        add_cuflags("-Xcompiler=-fPIC")
        set_policy("build.cuda.devlink", true)
        add_links("cudart")
    end
