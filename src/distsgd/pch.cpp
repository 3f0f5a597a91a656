// Compiles the precompiled torch header once (CMake's distsgd_torch_pch); every torch layer reuses it.
