/* LD_PRELOAD shim for tests/debuginfod.rs: Debian 12's debuginfod (elfutils 0.188) has no
 * option to choose its listen address and binds the wildcard address; tests must serve on
 * loopback only. This bind() turns the IPv4 wildcard into 127.0.0.1 and the IPv6 wildcard
 * into ::ffff:127.0.0.1 (debuginfod opens one dual-stack socket: that is IPv4 loopback on
 * it). Any other address is bound as asked. The test checks /proc/net/tcp{,6} afterwards. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    int (*real_bind)(int, const struct sockaddr *, socklen_t) = dlsym(RTLD_NEXT, "bind");
    if (addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in v4;
        memcpy(&v4, addr, sizeof v4);
        if (v4.sin_addr.s_addr == htonl(INADDR_ANY))
            v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return real_bind(fd, (const struct sockaddr *)&v4, sizeof v4);
    }
    if (addr && addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 v6;
        memcpy(&v6, addr, sizeof v6);
        if (IN6_IS_ADDR_UNSPECIFIED(&v6.sin6_addr)) {
            memset(&v6.sin6_addr, 0, sizeof v6.sin6_addr);
            v6.sin6_addr.s6_addr[10] = 0xff;
            v6.sin6_addr.s6_addr[11] = 0xff;
            v6.sin6_addr.s6_addr[12] = 127;
            v6.sin6_addr.s6_addr[15] = 1;
        }
        return real_bind(fd, (const struct sockaddr *)&v6, sizeof v6);
    }
    return real_bind(fd, addr, len);
}
