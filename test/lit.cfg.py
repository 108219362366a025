# lit configuration for Weft's FileCheck tests.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "Weft"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.weft_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.weft_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["weft-opt", "weftc", "weft-translate"], [config.weft_tools_dir])
# The tools' folder, for scripts that take it (bench/soak.sh's BIN).
config.substitutions.append(("%{weft_bin}", config.weft_tools_dir))

# Generated-kernel caches stay inside the build tree during tests.
config.environment["XDG_CACHE_HOME"] = os.path.join(config.weft_obj_root, "cache")

# x86 CPU features some tests need (the GEMM backend's kernel choice).
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = cpuinfo.read()
    if " avx2" in flags and " fma" in flags:
        config.available_features.add("avx2")
except OSError:
    pass

# Network namespaces (root and iproute2): the two-node test runs its ranks
# as two hosts joined by a veth pair.
import subprocess

if hasattr(os, "geteuid") and os.geteuid() == 0:
    probe = "weft-lit-%d" % os.getpid()
    try:
        if subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode == 0:
            subprocess.run(["ip", "netns", "del", probe], capture_output=True)
            if subprocess.run(["unshare", "--uts", "true"], capture_output=True).returncode == 0:
                config.available_features.add("netns")
    except OSError:
        pass

# Headless Chromium (Debian's chromium) renders weftc --explain's page.
import shutil

if shutil.which("chromium"):
    config.available_features.add("chromium")

# A real torchrun (PyPI's PyTorch, which scripts/setup-torch.sh puts in the
# build tree, or WEFT_TORCHRUN naming one): torchrun-real.test runs weft-run
# under it, restarts included.
torchrun = os.environ.get("WEFT_TORCHRUN") or os.path.join(
    config.weft_obj_root, "torch-venv", "bin", "torchrun")
if os.access(torchrun, os.X_OK):
    config.available_features.add("torchrun")
    config.substitutions.append(("%{torchrun}", torchrun))
