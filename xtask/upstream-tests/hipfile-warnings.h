/* Upstream hipFile system tests harness (xtask/upstream-tests/run.sh), our own: upstream's warning-control macros, empty here. */
#pragma once
#define HIPFILE_WARN_NO_GLOBAL_CTOR_OFF
#define HIPFILE_WARN_NO_GLOBAL_CTOR_ON
#define HIPFILE_WARN_NO_EXIT_DTOR_OFF
#define HIPFILE_WARN_NO_EXIT_DTOR_ON
