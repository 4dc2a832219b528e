// libFuzzer's driver, for a fuzz target with a main of its own (Swift's executables have one).
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
