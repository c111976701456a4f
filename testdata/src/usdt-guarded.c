/* The probes with semaphores of testdata/src/usdt.c's program (see there). sys/sdt.h gives
 * every probe of a translation unit compiled with _SDT_HAS_SEMAPHORES a semaphore named
 * PROVIDER_NAME_semaphore, defined here in .probes as `dtrace -G` would. */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

/* Semaphores: sys/sdt.h's STAP_PROBE_ENABLED reads PROVIDER_NAME_semaphore. */
__extension__ volatile unsigned short stacksym_demo_guarded_semaphore
    __attribute__((unused, section(".probes")));
__extension__ volatile unsigned short stacksym_demo_guarded2_semaphore
    __attribute__((unused, section(".probes")));
#define GUARDED_ENABLED() __builtin_expect(stacksym_demo_guarded_semaphore, 0)
#define GUARDED2_ENABLED() __builtin_expect(stacksym_demo_guarded2_semaphore, 0)

__attribute__((noinline)) int guarded_site(int i, const char *what)
{
    int ran = 0;
    if (GUARDED_ENABLED()) {
        STAP_PROBE2(stacksym_demo, guarded, i, what);
        ran = 1;
    }
    if (GUARDED2_ENABLED()) {
        STAP_PROBE1(stacksym_demo, guarded2, (long)i * 2);
    }
    return ran;
}

