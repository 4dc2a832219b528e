// The header declares libFuzzer's driver; libFuzzer itself comes with -sanitize=fuzzer.
#include "CFuzzer.h"
