#!/usr/bin/env bash
# The layers hold: from each layer's include root, an include of a higher layer's header fails to compile, and
# one of its own or a lower layer's header is found. Usage: layers_test.sh CXX BUILD/layers
set -uo pipefail
cxx=$1
layers=$2
failures=0
expect() {  # expect ok|fail LAYER HEADER
  local want=$1 layer=$2 header=$3
  # The preprocessor is enough: what fails is finding the header (or one it includes).
  if echo "#include \"distsgd/$header\"" | "$cxx" -std=c++17 -E -I "$layers/$layer" -x c++ - >/dev/null 2>&1; then
    got=ok
  else
    got=fail
  fi
  if [ "$got" != "$want" ]; then
    echo "FAIL: from $layer, including $header: expected $want, got $got"
    failures=$((failures + 1))
  else
    echo "ok: from $layer, including $header: $got"
  fi
}
expect fail core algo/algorithm.hpp
expect fail core train/options.hpp
expect fail core optim/sgd.hpp
expect ok   core core/timeline.hpp
expect fail data models/model.hpp
expect fail optim algo/algorithm.hpp
expect fail comm optim/sgd.hpp
expect fail algo train/trainer.hpp
expect fail algo data/dataset.hpp
expect ok   algo optim/flat_parameters.hpp
expect fail cluster comm/launcher.hpp
expect fail train cluster/emulated_cluster.hpp
expect ok   cluster core/error.hpp
expect fail sim train/options.hpp
expect fail sim cluster/link_spec.hpp
expect fail train cli/train_command.hpp
expect ok   train algo/algorithm.hpp
expect fail algo sim/engine/actor_scheduler.hpp
expect fail algo vcluster/virtual_communicator.hpp
expect ok   algo core/runtime.hpp
expect ok   vcluster sim/engine/actor_scheduler.hpp
expect fail vcluster algo/algorithm.hpp
expect ok   train vcluster/virtual_communicator.hpp
expect ok   experiment sim/simulator_settings.hpp
expect ok   experiment train/options.hpp
expect fail experiment cli/train_command.hpp
expect fail experiment report/report_data.hpp
expect ok   report experiment/study_csv.hpp
expect fail report cli/report_command.hpp
expect fail sim experiment/study_spec.hpp
expect ok   cli report/report_html.hpp
expect ok   sim catalog/algorithm_catalog.hpp
expect ok   algo catalog/algorithm_defaults.hpp
expect fail catalog sim/simulator_settings.hpp
expect fail catalog algo/algorithm.hpp
# The harness and the report take no command-line library (CLI11 is a system header, so the include root cannot
# hide it): cli/ parses the flags and calls them.
src=$(cd "$layers/.." && grep -o 'CMAKE_HOME_DIRECTORY:INTERNAL=.*' CMakeCache.txt | cut -d= -f2)/src/distsgd
for layer in experiment report sim catalog core; do
  if grep -l '#include <CLI/' "$src/$layer"/*.[ch]pp 2>/dev/null; then
    echo "FAIL: $layer includes CLI11 (above)"
    failures=$((failures + 1))
  else
    echo "ok: $layer includes no CLI11"
  fi
done
exit $((failures > 0))
