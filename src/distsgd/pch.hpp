// Precompiled for every target: torch is the one heavy header set.
#pragma once
#include <torch/torch.h>
