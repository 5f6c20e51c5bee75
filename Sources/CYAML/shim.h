#ifndef TOKENGATE_CYAML_SHIM_H
#define TOKENGATE_CYAML_SHIM_H
#include <yaml.h>
#endif
