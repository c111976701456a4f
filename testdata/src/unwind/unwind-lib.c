/* libunwind-demo.so for unwind-demo.c: frames in a second module, entered through the PLT,
 * and a call back into the executable. */
#include "unwind-lib.h"

static volatile unsigned long lib_sink;

__attribute__((noinline)) static void lib_spin(int n) {
    for (int i = 0; i < n; i++)
        lib_sink += (unsigned long)i * 3;
}

void lib_work(int n) {
    lib_spin(n);
    lib_sink++;
}

void lib_callback(void (*fn)(int), int n) {
    fn(n);
    lib_spin(n / 4);
}
