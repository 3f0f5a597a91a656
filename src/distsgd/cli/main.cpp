// distsgd: the command-line program (cli/program.cpp has it all; an extension's main calls it the same way).
#include "distsgd/cli/program.hpp"

int main(int argc, char** argv) { return distsgd::cli::program_main(argc, argv); }
