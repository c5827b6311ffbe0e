/* bay: the native client of browserbay's warm road (issue 19).
 *
 * It does what browserbay_cli/hot.py's _warm + run do -- the argv, as it is, to a running
 * keeper on the owner's channel, and the keeper's printed answer written out -- and hands
 * everything else to the Python client, `bay-py` beside this binary (the lean launcher),
 * by exec, with BAY_HANDED saying what already happened (hot.py's _handed):
 *
 *   no BAY_HANDED   nothing was sent, or nothing can have run (no keeper, no trust, no
 *                   hello yet): Python does everything as it always did;
 *   whole           the keeper said so, or is of another version, or hot.py would not take
 *                   the warm road for this argv (nothing ran);
 *   deadline        the keeper had the request and did not answer in time: never re-sent;
 *   cut_off         the keeper had the request and went away (or said what nobody can
 *                   read): never re-sent;
 *   said:FD         the keeper's answer line, in the inherited memfd FD: Python prints it;
 *   rest:FD:SOCK:MS a line after the hello this reader cannot judge (a progress line with a
 *                   NaN or a value str() prints its own way, or the answer) and all read
 *                   after it, in the memfd FD, then the keeper socket itself (SOCK) with MS
 *                   milliseconds left: Python reads the rest, progress and answer.
 *
 * Standard C and Linux libc only; one file. Built by `python -m browserbay_cli.launcher
 * --native` (scripts/setup.sh), which embeds the version, protocol and limits below from
 * browserbay._version and browserbay.protocol. cli/tests/test_native.py holds it to
 * byte-for-byte parity with bay-py.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef BAY_VERSION
#error "build with -DBAY_VERSION='\"x.y.z\"' (python -m browserbay_cli.launcher --native)"
#endif
#ifndef BAY_PROTOCOL
#error "build with -DBAY_PROTOCOL=N"
#endif
#ifndef BAY_FACTS /* protocol.ARGV_FACTS */
#error "build with -DBAY_FACTS='\"BAY_SESSION\",...'"
#endif
#ifndef BAY_MAX_ANSWER
#error "build with -DBAY_MAX_ANSWER=N"
#endif
#ifndef BAY_DEFAULT_TIMEOUT
#error "build with -DBAY_DEFAULT_TIMEOUT=S"
#endif
#ifndef BAY_MAX_TIMEOUT
#error "build with -DBAY_MAX_TIMEOUT=S"
#endif

static const char *const FACTS[] = {BAY_FACTS};
static char **g_argv;

/* ------------------------------------------------------------------ handing over */

static void say_py_failed(const char *path, int err) {
    dprintf(2, "bay: cannot run the Python client %s: %s\n", path, strerror(err));
}

/* exec bay-py beside this binary with the same argv; `how` NULL: no BAY_HANDED. */
static void hand_over(const char *how) __attribute__((noreturn));
static void hand_over(const char *how) {
    static char self[PATH_MAX + 8];
    ssize_t n = readlink("/proc/self/exe", self, PATH_MAX);
    if (n <= 0) {
        const char *a0 = g_argv[0] ? g_argv[0] : "";
        n = (ssize_t)strlen(a0);
        if (n > PATH_MAX || !strchr(a0, '/')) {
            dprintf(2, "bay: cannot find the Python client (bay-py): where is this bay?\n");
            _exit(1);
        }
        memcpy(self, a0, (size_t)n);
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) {
        dprintf(2, "bay: cannot find the Python client (bay-py) beside %s\n", self);
        _exit(1);
    }
    strcpy(slash + 1, "bay-py");
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    if (how) {
        if (setenv("BAY_HANDED", how, 1) != 0) {
            dprintf(2, "bay: cannot hand the command over: %s\n", strerror(errno));
            _exit(1);
        }
    }
    execv(self, g_argv);
    say_py_failed(self, errno);
    _exit(1);
}

/* `len` bytes from `s` in a memfd bay-py inherits (never in argv or the environment): its
 * descriptor. The keeper had the request: any failure is cut_off, never sent again. */
static int memfd_of(const char *name, const char *s, size_t len) {
    int fd = memfd_create(name, 0); /* no MFD_CLOEXEC: bay-py inherits it */
    if (fd < 0)
        hand_over("cut_off"); /* it ran: said as a keeper gone, never sent again */
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, s + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            hand_over("cut_off");
        }
        off += (size_t)w;
    }
    return fd;
}

/* The keeper's answer line handed over: said:FD. */
static void hand_said(const char *line, size_t len) __attribute__((noreturn));
static void hand_said(const char *line, size_t len) {
    char how[32];
    snprintf(how, sizeof how, "said:%d", memfd_of("bay-said", line, len));
    hand_over(how);
}

/* The keeper socket and the deadline, for hand_rest. */
static int g_sock = -1;
static double g_end;
static double now(void);

/* A line this reader cannot judge, and all read after it (len bytes from `from`), handed
 * over with the socket itself: it may be a progress line (then the answer still comes), so
 * the Python client reads on from there -- the same bytes bay-py would have read. */
static void hand_rest(const char *from, size_t len) __attribute__((noreturn));
static void hand_rest(const char *from, size_t len) {
    int fd = memfd_of("bay-rest", from, len);
    int flags = fcntl(g_sock, F_GETFD);
    if (flags < 0 || fcntl(g_sock, F_SETFD, flags & ~FD_CLOEXEC) < 0)
        hand_over("cut_off");
    double left = g_end - now();
    char how[64];
    snprintf(how, sizeof how, "rest:%d:%d:%lld", fd, g_sock,
             left > 0 ? (long long)(left * 1000.0) : 0LL);
    hand_over(how);
}

/* ------------------------------------------------------------------ small helpers */

typedef struct {
    char *p;
    size_t n, cap;
} buf_t;

static void put(buf_t *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->n + n + 1 > cap)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            hand_over(NULL);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void puts_(buf_t *b, const char *s) { put(b, s, strlen(s)); }

/* Strict UTF-8 (as Python's codec): no overlongs, no surrogates, nothing past U+10FFFF.
 * Answers the length of the sequence at s (1..4), or 0 when it is not valid. */
static int utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (n >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
            return 0;
        if (c == 0xE0 && s[1] < 0xA0)
            return 0; /* overlong */
        if (c == 0xED && s[1] >= 0xA0)
            return 0; /* surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
            return 0;
        if (c == 0xF0 && s[1] < 0x90)
            return 0;
        if (c == 0xF4 && s[1] >= 0x90)
            return 0;
        return 4;
    }
    return 0;
}

static int valid_utf8(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    while (n) {
        int k = utf8_seq(p, n);
        if (!k)
            return 0;
        p += k;
        n -= (size_t)k;
    }
    return 1;
}

/* json.dumps(s, ensure_ascii=False)'s string, as protocol.encode writes it. */
static void put_json_string(buf_t *b, const char *s) {
    static const char hex[] = "0123456789abcdef";
    put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned c = *p;
        char esc[8];
        switch (c) {
        case '"': put(b, "\\\"", 2); break;
        case '\\': put(b, "\\\\", 2); break;
        case '\n': put(b, "\\n", 2); break;
        case '\r': put(b, "\\r", 2); break;
        case '\t': put(b, "\\t", 2); break;
        case '\b': put(b, "\\b", 2); break;
        case '\f': put(b, "\\f", 2); break;
        default:
            if (c < 0x20) {
                esc[0] = '\\', esc[1] = 'u', esc[2] = '0', esc[3] = '0';
                esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
                put(b, esc, 6);
            } else {
                put(b, (const char *)p, 1);
            }
        }
    }
    put(b, "\"", 1);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* All of it written (short writes, EINTR); -1 on an error (EPIPE: SIGPIPE is ignored, as
 * Python ignores it). */
static int write_all(int fd, const char *s, size_t n) {
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ------------------------------------------------------------------ the socket path */

static uint32_t crc32_of(const unsigned char *s, size_t n) { /* zlib.crc32 */
    uint32_t c = 0xFFFFFFFFu;
    while (n--) {
        c ^= *s++;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

/* os.path.normpath (POSIX) of an absolute path, in place into out. */
static void normpath(const char *path, buf_t *out) {
    int slashes = 0;
    if (path[0] == '/')
        slashes = (path[1] == '/' && path[2] != '/') ? 2 : 1;
    size_t n = strlen(path);
    const char **comps = calloc(n + 1, sizeof *comps);
    size_t *lens = calloc(n + 1, sizeof *lens);
    if (!comps || !lens)
        hand_over(NULL);
    size_t k = 0;
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *q = p;
        while (*q && *q != '/')
            q++;
        size_t len = (size_t)(q - p);
        if (len == 1 && p[0] == '.') {
        } else if (len == 2 && p[0] == '.' && p[1] == '.') {
            if (k && !(lens[k - 1] == 2 && comps[k - 1][0] == '.' && comps[k - 1][1] == '.'))
                k--;
            else if (!slashes) {
                comps[k] = p, lens[k] = len, k++;
            }
        } else {
            comps[k] = p, lens[k] = len, k++;
        }
        p = q;
    }
    put(out, "//", (size_t)slashes);
    for (size_t i = 0; i < k; i++) {
        if (i)
            put(out, "/", 1);
        put(out, comps[i], lens[i]);
    }
    if (out->n == 0)
        put(out, ".", 1);
    free(comps);
    free(lens);
}

/* sockpath.socket_path(): into out; 0, or -1 when only Python can say (hand over). */
static int socket_path(buf_t *out) {
    buf_t rt = {0};
    const char *home = getenv("BAY_HOME");
    if (home && *home) {
        buf_t full = {0};
        if (home[0] == '~') { /* os.path.expanduser: "~" and "~/..." with HOME only */
            const char *h = getenv("HOME");
            if ((home[1] && home[1] != '/') || !h)
                return -1;
            size_t hl = strlen(h);
            while (hl && h[hl - 1] == '/')
                hl--;
            put(&full, h, hl);
            puts_(&full, home + 1);
            if (full.n == 0)
                put(&full, "/", 1);
        } else {
            puts_(&full, home);
        }
        if (full.p[0] != '/') { /* os.path.abspath */
            char cwd[PATH_MAX];
            if (!getcwd(cwd, sizeof cwd))
                return -1;
            buf_t j = {0};
            puts_(&j, cwd);
            if (j.n && j.p[j.n - 1] != '/')
                put(&j, "/", 1);
            puts_(&j, full.p);
            free(full.p);
            full = j;
        }
        normpath(full.p, &rt);
        free(full.p);
        if (rt.p[rt.n - 1] != '/')
            put(&rt, "/", 1);
        puts_(&rt, "run");
    } else {
        const char *base = getenv("XDG_RUNTIME_DIR");
        if (base && base[0] == '/') {
            puts_(&rt, base);
            if (rt.p[rt.n - 1] != '/')
                put(&rt, "/", 1);
            puts_(&rt, "browserbay");
        } else {
            char t[64];
            snprintf(t, sizeof t, "/tmp/browserbay-%u", (unsigned)getuid());
            puts_(&rt, t);
        }
    }
    puts_(out, rt.p);
    if (out->p[out->n - 1] != '/')
        put(out, "/", 1);
    puts_(out, "keeper.sock");
    if (out->n >= 100) {
        char t[96];
        snprintf(t, sizeof t, "/tmp/bay-%u-%08x/keeper.sock", (unsigned)getuid(),
                 (unsigned)crc32_of((const unsigned char *)rt.p, rt.n));
        out->n = 0;
        puts_(out, t);
    }
    free(rt.p);
    return 0;
}

/* sockpath.distrust(): 0 when this user's own (a private directory), else -1. */
static int trusted_path(const char *path, int directory) {
    struct stat st;
    if (lstat(path, &st) != 0)
        return -1;
    if (S_ISLNK(st.st_mode))
        return -1;
    if (directory && !S_ISDIR(st.st_mode))
        return -1;
    if (st.st_uid != getuid())
        return -1;
    if (directory && (st.st_mode & 077))
        return -1;
    return 0;
}

/* os.path.dirname */
static void dirname_of(const char *path, buf_t *out) {
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) + 1 : 0;
    size_t all = 0;
    while (all < n && path[all] == '/')
        all++;
    if (n && all != n)
        while (n && path[n - 1] == '/')
            n--;
    put(out, path, n);
    if (!out->p)
        put(out, "", 0);
}

/* hot._trusted: a connected socket, or -1 (the Python client checks again and says why). */
static int trusted_socket(const char *path) {
    buf_t dir = {0};
    dirname_of(path, &dir);
    int bad = trusted_path(dir.p, 1) || trusted_path(path, 0);
    free(dir.p);
    if (bad)
        return -1;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path)
        return -1;
    strcpy(sa.sun_path, path);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    int r;
    do
        r = connect(s, (struct sockaddr *)&sa, sizeof sa);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        close(s);
        return -1;
    }
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
        close(s);
        return -1;
    }
    return s;
}

/* ------------------------------------------------------------------ --timeout */

/* A decimal of the plain form [+-]digits[.digits][e[+-]digits]: what float() and strtod
 * read alike. Anything else (whitespace, '_', inf, nan, non-ASCII digits) is left to
 * Python's float(), which the Python client runs. */
static int plain_decimal(const char *s) {
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    int digits = 0;
    while (*p >= '0' && *p <= '9')
        p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++, digits++;
    }
    if (!digits)
        return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return 0;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == 0;
}

/* hot._deadline: 1 and *wait set, 0: hot.py would hand the argv to the whole client, -1:
 * only Python's float() can say. */
static int deadline(int argc, char **argv, double *wait) {
    const char *value = NULL;
    for (int n = 1; n < argc; n++) {
        if (strcmp(argv[n], "--") == 0)
            break;
        if (strcmp(argv[n], "--timeout") == 0 && n + 1 < argc)
            value = argv[n + 1];
        else if (strncmp(argv[n], "--timeout=", 10) == 0)
            value = argv[n] + 10;
    }
    double seconds = BAY_DEFAULT_TIMEOUT;
    if (value) {
        if (!plain_decimal(value))
            return -1;
        seconds = strtod(value, NULL); /* the C locale's: LC_NUMERIC is never set */
    }
    if (!(seconds > 0 && seconds <= BAY_MAX_TIMEOUT))
        return 0;
    *wait = seconds + 5.0;
    return 1;
}

/* ------------------------------------------------------------------ reading JSON */

/* A conservative reader of the keeper's lines. J_INVALID: protocol.decode refuses the line
 * too (bad syntax, not UTF-8, a control character or a lone surrogate in a string, not an
 * object); J_ODD: Python might read it (NaN, duplicate keys, deep nesting, a long number)
 * but this reader does not: the line goes to Python. */
enum { J_OK = 0, J_INVALID = 1, J_ODD = 2 };
enum { T_STR, T_INT, T_FLOAT, T_TRUE, T_FALSE, T_NULL, T_OBJ, T_ARR };
#define MAX_NEST 16 /* protocol.MAX_DEPTH */

typedef struct {
    const unsigned char *p, *end;
    int err;
} rd_t;

typedef struct {
    const unsigned char *start, *end; /* the value's text */
    int type;
} val_t;

static void ws(rd_t *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int hex4(const unsigned char *p, const unsigned char *end) {
    if (end - p < 4)
        return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static void put_utf8(buf_t *b, unsigned cp) {
    char u[4];
    size_t n;
    if (cp < 0x80)
        u[0] = (char)cp, n = 1;
    else if (cp < 0x800)
        u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 63)), n = 2;
    else if (cp < 0x10000)
        u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 63)),
        u[2] = (char)(0x80 | (cp & 63)), n = 3;
    else
        u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 63)),
        u[2] = (char)(0x80 | ((cp >> 6) & 63)), u[3] = (char)(0x80 | (cp & 63)), n = 4;
    put(b, u, n);
}

/* A string at r->p (the opening quote), decoded into out when out is not NULL. */
static void read_string(rd_t *r, buf_t *out) {
    r->p++;
    for (;;) {
        if (r->p >= r->end) {
            r->err = J_INVALID;
            return;
        }
        unsigned c = *r->p;
        if (c == '"') {
            r->p++;
            if (out && !out->p)
                put(out, "", 0);
            return;
        }
        if (c < 0x20) { /* strict=True */
            r->err = J_INVALID;
            return;
        }
        if (c == '\\') {
            if (r->end - r->p < 2) {
                r->err = J_INVALID;
                return;
            }
            unsigned e = r->p[1];
            const char *simple = NULL;
            switch (e) {
            case '"': simple = "\""; break;
            case '\\': simple = "\\"; break;
            case '/': simple = "/"; break;
            case 'b': simple = "\b"; break;
            case 'f': simple = "\f"; break;
            case 'n': simple = "\n"; break;
            case 'r': simple = "\r"; break;
            case 't': simple = "\t"; break;
            case 'u': break;
            default: r->err = J_INVALID; return;
            }
            if (simple) {
                if (out)
                    put(out, simple, 1);
                r->p += 2;
                continue;
            }
            int cp = hex4(r->p + 2, r->end);
            if (cp < 0) {
                r->err = J_INVALID;
                return;
            }
            r->p += 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF) { /* a lone low surrogate */
                r->err = J_INVALID;
                return;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) { /* needs its low half, escaped */
                int lo = (r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u')
                             ? hex4(r->p + 2, r->end)
                             : -1;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    r->err = J_INVALID;
                    return;
                }
                r->p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (out)
                put_utf8(out, (unsigned)cp);
            continue;
        }
        int k = utf8_seq(r->p, (size_t)(r->end - r->p));
        if (!k) {
            r->err = J_INVALID;
            return;
        }
        if (out)
            put(out, (const char *)r->p, (size_t)k);
        r->p += k;
    }
}

static int word(rd_t *r, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(r->end - r->p) >= n && memcmp(r->p, w, n) == 0) {
        r->p += n;
        return 1;
    }
    return 0;
}

static void read_value(rd_t *r, val_t *v, int depth);

static void read_container(rd_t *r, int depth, int object) {
    if (depth > MAX_NEST) {
        r->err = J_ODD;
        return;
    }
    r->p++;
    ws(r);
    char close = object ? '}' : ']';
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return;
    }
    for (;;) {
        val_t v;
        if (object) {
            ws(r);
            if (r->p >= r->end || *r->p != '"') {
                r->err = J_INVALID;
                return;
            }
            read_string(r, NULL);
            if (r->err)
                return;
            ws(r);
            if (r->p >= r->end || *r->p != ':') {
                r->err = J_INVALID;
                return;
            }
            r->p++;
        }
        read_value(r, &v, depth);
        if (r->err)
            return;
        ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == close) {
            r->p++;
            return;
        }
        r->err = J_INVALID;
        return;
    }
}

static void read_value(rd_t *r, val_t *v, int depth) {
    ws(r);
    v->start = r->p;
    if (r->p >= r->end) {
        r->err = J_INVALID;
        return;
    }
    unsigned c = *r->p;
    if (c == '"') {
        v->type = T_STR;
        read_string(r, NULL);
    } else if (c == '{' || c == '[') {
        v->type = c == '{' ? T_OBJ : T_ARR;
        read_container(r, depth + 1, c == '{');
    } else if (word(r, "true")) {
        v->type = T_TRUE;
    } else if (word(r, "false")) {
        v->type = T_FALSE;
    } else if (word(r, "null")) {
        v->type = T_NULL;
    } else if (word(r, "NaN") || word(r, "Infinity") || word(r, "-Infinity")) {
        r->err = J_ODD; /* Python reads these */
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        const unsigned char *p = r->p;
        if (*p == '-')
            p++;
        if (p >= r->end || !(*p >= '0' && *p <= '9')) {
            r->err = J_INVALID;
            return;
        }
        if (*p == '0')
            p++;
        else
            while (p < r->end && *p >= '0' && *p <= '9')
                p++;
        v->type = T_INT;
        if (p < r->end && *p == '.' && p + 1 < r->end && p[1] >= '0' && p[1] <= '9') {
            v->type = T_FLOAT;
            p++;
            while (p < r->end && *p >= '0' && *p <= '9')
                p++;
        }
        if (p < r->end && (*p == 'e' || *p == 'E')) {
            const unsigned char *q = p + 1;
            if (q < r->end && (*q == '+' || *q == '-'))
                q++;
            if (q < r->end && *q >= '0' && *q <= '9') {
                v->type = T_FLOAT;
                p = q;
                while (p < r->end && *p >= '0' && *p <= '9')
                    p++;
            }
        }
        /* Python's scanner stops a number where its grammar stops ("1." is 1 then "."),
         * and the container's own check then refuses what follows, as here. */
        r->p = p;
        if (p - v->start > 40)
            r->err = J_ODD; /* int's digit limit, exact floats: Python's to judge */
    } else {
        r->err = J_INVALID;
    }
    v->end = r->p;
}

/* A whole line: one object and nothing after it but whitespace. */
static int read_line(const unsigned char *s, size_t n, val_t *top) {
    rd_t r = {s, s + n, J_OK};
    read_value(&r, top, 0);
    if (r.err)
        return r.err;
    ws(&r);
    if (r.p != r.end || top->type != T_OBJ)
        return J_INVALID;
    return J_OK;
}

/* The member `key` of the (already read) object obj: 1 and *v, 0 when absent; J_ODD in
 * *err when it is there twice (Python keeps the last; this reader reads none). */
static int member(const val_t *obj, const char *key, val_t *v, int *err) {
    rd_t r = {obj->start + 1, obj->end, J_OK};
    int found = 0;
    buf_t k = {0};
    ws(&r);
    if (*r.p == '}')
        return 0;
    for (;;) {
        ws(&r);
        k.n = 0;
        read_string(&r, &k);
        ws(&r);
        r.p++; /* ':' */
        val_t x;
        read_value(&r, &x, 1);
        if (k.n == strlen(key) && memcmp(k.p, key, k.n) == 0) {
            if (found)
                *err = J_ODD;
            *v = x;
            found = 1;
        }
        ws(&r);
        if (*r.p == ',') {
            r.p++;
            continue;
        }
        break;
    }
    free(k.p);
    return found;
}

static void string_of(const val_t *v, buf_t *out) {
    rd_t r = {v->start, v->end, J_OK};
    read_string(&r, out);
}

/* An integer token within a C int (os._exit's range): 1 and *out, else 0. */
static int int_of(const val_t *v, long long *out) {
    if (v->type == T_TRUE || v->type == T_FALSE) {
        *out = v->type == T_TRUE; /* int(True) */
        return 1;
    }
    if (v->type != T_INT || v->end - v->start > 12)
        return 0;
    char t[16];
    memcpy(t, v->start, (size_t)(v->end - v->start));
    t[v->end - v->start] = 0;
    long long x = strtoll(t, NULL, 10);
    if (x < INT_MIN || x > INT_MAX)
        return 0;
    *out = x;
    return 1;
}

/* ------------------------------------------------------------------ the keeper's lines */

/* The keeper's hello: 1 compatible, 0 not (nothing ran: the whole client replaces it).
 *
 * Why no command runs twice: the keeper answers a hello before it reads the next frame on
 * the connection (daemon._serve_frames), and a keeper of another version runs nothing
 * after a hello of ours. So a request ran only if the keeper's first line is a hello
 * protocol.compatible() takes. A line protocol.decode refuses (J_INVALID), a line with no
 * "hello", or a hello of another version: hot.py takes each as "nothing ran" and so does
 * this (whole). A line Python could read but this reader cannot (J_ODD: NaN, a duplicate
 * key, ...) or a hello Python would fail on (not an object) might be a compatible hello
 * whose keeper now runs the request: cut_off, never sent again. */
static int keeper_hello(const unsigned char *line, size_t n) {
    val_t top, hello, v;
    int err = read_line(line, n, &top);
    if (err == J_INVALID)
        hand_over("whole");
    if (err)
        hand_over("cut_off");
    int has = member(&top, "hello", &hello, &err);
    if (err)
        hand_over("cut_off");
    if (!has)
        return 0; /* no hello: not compatible (hot.py: .get("hello", {})) */
    if (hello.type != T_OBJ)
        hand_over("cut_off"); /* hot.py fails on it (an AttributeError) */
    int ok = 0;
    if (member(&hello, "version", &v, &err) && v.type == T_STR) {
        buf_t s = {0};
        string_of(&v, &s);
        ok = strlen(s.p) == s.n && strcmp(s.p, BAY_VERSION) == 0;
        free(s.p);
    }
    if (err)
        hand_over("cut_off");
    if (!ok)
        return 0; /* a version Python's == refuses too: the protocol is not compared */
    ok = 0;
    if (member(&hello, "protocol", &v, &err)) {
        long long p;
        if (v.type == T_FLOAT) {
            char t[64];
            memcpy(t, v.start, (size_t)(v.end - v.start));
            t[v.end - v.start] = 0;
            ok = strtod(t, NULL) == (double)BAY_PROTOCOL; /* 1.0 == 1 in Python */
        } else if (int_of(&v, &p)) {
            ok = p == BAY_PROTOCOL; /* True == 1 too */
        }
    }
    if (err)
        hand_over("cut_off");
    return ok;
}

static void out_exit(const char *out, size_t on, const char *err, size_t en, long long code)
    __attribute__((noreturn));
static void out_exit(const char *out, size_t on, const char *err, size_t en, long long code) {
    /* hot.run's order: all of stdout (flushed), then all of stderr. */
    if (write_all(1, out, on) < 0 || write_all(2, err, en) < 0)
        _exit(1); /* BrokenPipeError: 1 */
    _exit((int)code);
}

/* One line after the hello (`avail` bytes read from `line` on: it, its newline and what
 * came after): returns when it was progress; else it ends the process. A line it cannot
 * judge, which may be progress, is handed over with the rest (hand_rest). */
static void keeper_line(const char *line, size_t n, size_t avail) {
    const unsigned char *s = (const unsigned char *)line;
    val_t top, v, id, printed;
    int err = read_line(s, n, &top);
    if (err == J_INVALID)
        hand_over("cut_off"); /* protocol.decode refuses it: hot.py's cut_off */
    if (err)
        hand_rest(line, avail); /* NaN, a duplicate key, deep: progress or the answer */
    int has_progress = member(&top, "progress", &v, &err);
    val_t okv;
    int has_ok = member(&top, "ok", &okv, &err);
    int has_id = member(&top, "id", &id, &err);
    int has_printed = member(&top, "printed", &printed, &err);
    val_t answer;
    int has_answer = member(&top, "answer", &answer, &err);
    if (err)
        hand_rest(line, avail);
    if (has_progress && !has_ok && has_id && id.type == T_STR) {
        buf_t i = {0};
        string_of(&id, &i);
        int one = i.n == 1 && i.p[0] == '1';
        free(i.p);
        if (one) {
            buf_t t = {0};
            if (v.type == T_INT && !(v.end - v.start == 2 && v.start[0] == '-' && v.start[1] == '0'))
                put(&t, (const char *)v.start, (size_t)(v.end - v.start)); /* str(int) */
            else if (v.type == T_STR)
                string_of(&v, &t);
            else
                hand_rest(line, avail); /* str() of it is Python's; the answer comes after */
            put(&t, "\n", 1);
            if (write_all(2, t.p, t.n) < 0)
                _exit(1);
            free(t.p);
            return;
        }
    }
    if (!has_printed && !has_answer)
        hand_over("whole"); /* "whole", or a keeper that does not know the road */
    if (!has_printed || printed.type != T_OBJ)
        hand_said(line, n); /* an answer too long to print whole: Python cuts it */
    val_t out, er, code;
    buf_t o = {0}, e = {0};
    long long c = 1;
    if (member(&printed, "out", &out, &err)) {
        if (out.type != T_STR)
            hand_said(line, n);
        string_of(&out, &o);
    }
    if (member(&printed, "err", &er, &err)) {
        if (er.type != T_STR)
            hand_said(line, n);
        string_of(&er, &e);
    }
    if (member(&printed, "code", &code, &err) && !int_of(&code, &c))
        hand_said(line, n);
    if (err)
        hand_said(line, n);
    out_exit(o.p ? o.p : "", o.n, e.p ? e.p : "", e.n, c);
}

/* ------------------------------------------------------------------ main */

static void interrupted(int sig) {
    (void)sig;
    _exit(130); /* KeyboardInterrupt: 130 */
}

/* What Python writes stdout and stderr in: UTF-8 here, or the Python client decides. */
static int python_writes_utf8(void) {
    const char *io = getenv("PYTHONIOENCODING");
    if (io && *io)
        return 0;
    const char *mode = getenv("PYTHONUTF8");
    if (mode && strcmp(mode, "1") == 0)
        return 1;
    if (mode && *mode && strcmp(mode, "0") != 0)
        return 0; /* Python refuses the value itself */
    const char *loc = setlocale(LC_CTYPE, "");
    const char *set = nl_langinfo(CODESET);
    if (set && strcmp(set, "UTF-8") == 0)
        return 1;
    /* the C/POSIX locale: Python's UTF-8 mode (PEP 540) unless PYTHONUTF8=0 */
    if (!loc || strcmp(loc, "C") == 0 || strcmp(loc, "POSIX") == 0)
        return !(mode && *mode);
    return 0;
}

int main(int argc, char **argv) {
    g_argv = argv;
    /* A standard descriptor closed: the socket or the memfd would take its number, and what
     * this writes to stdout or stderr (anyone's text) would go to the keeper as frames.
     * Python decides (its sys.stdout is None then); nothing is sent. */
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0)
            hand_over(NULL);
    const char *handed = getenv("BAY_HANDED");
    if (handed && *handed)
        hand_over(NULL); /* someone handed it already: Python reads it */
    if (argc < 1 || !python_writes_utf8())
        hand_over(NULL);
    const char *session = getenv("BAY_SOCKET");
    if (session && *session)
        hand_over("whole");
    for (int i = 1; i < argc; i++)
        if (!valid_utf8(argv[i]))
            hand_over("whole");
    double wait;
    int d = deadline(argc, argv, &wait);
    if (d < 0)
        hand_over(NULL);
    if (d == 0)
        hand_over("whole");

    buf_t frame = {0};
    puts_(&frame, "{\"hello\":{\"role\":\"client\",\"version\":");
    put_json_string(&frame, BAY_VERSION);
    char t[64];
    snprintf(t, sizeof t, ",\"protocol\":%d}}\n", BAY_PROTOCOL);
    puts_(&frame, t);
    puts_(&frame, "{\"id\":\"1\",\"argv\":[");
    for (int i = 1; i < argc; i++) {
        if (i > 1)
            put(&frame, ",", 1);
        put_json_string(&frame, argv[i]);
    }
    puts_(&frame, "],\"facts\":{\"env\":{");
    int first = 1;
    for (size_t i = 0; i < sizeof FACTS / sizeof *FACTS; i++) {
        const char *val = getenv(FACTS[i]);
        if (!val)
            continue;
        if (!valid_utf8(val))
            hand_over(NULL); /* protocol.encode fails on it: hot.py's whole client */
        if (!first)
            put(&frame, ",", 1);
        first = 0;
        put_json_string(&frame, FACTS[i]);
        put(&frame, ":", 1);
        put_json_string(&frame, val);
    }
    pid_t sid = getsid(0);
    if (sid < 0)
        hand_over(NULL);
    snprintf(t, sizeof t, "},\"sid\":%ld},\"progress\":true}\n", (long)sid);
    puts_(&frame, t);

    buf_t path = {0};
    if (socket_path(&path) < 0)
        hand_over(NULL);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL); /* as Python: a broken pipe is EPIPE, exit 1 */
    sa.sa_handler = interrupted;
    sigaction(SIGINT, &sa, NULL);

    int s = trusted_socket(path.p);
    if (s < 0)
        hand_over(NULL); /* Python checks again, starts a keeper or says why */
    double end = now() + wait;
    g_sock = s;
    g_end = end;
    struct timeval tv = {10, 0};
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    for (size_t off = 0; off < frame.n;) {
        ssize_t w = send(s, frame.p + off, frame.n - off, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            hand_over(NULL); /* no hello yet: nothing ran */
        }
        off += (size_t)w;
    }

    int hello = 0;
    buf_t in = {0};
    size_t start = 0; /* the first byte not yet read as a line */
    for (;;) {
        char *nl = in.n > start ? memchr(in.p + start, '\n', in.n - start) : NULL;
        if (!nl) {
            if (start) { /* keep only the unread part */
                memmove(in.p, in.p + start, in.n - start);
                in.n -= start;
                start = 0;
            }
            double left = hello ? end - now() : 10.0;
            if (left < 0.001)
                left = 0.001;
            struct pollfd pfd = {s, POLLIN, 0};
            int r = poll(&pfd, 1, (int)(left * 1000.0 + 0.999));
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                hand_over(hello ? "cut_off" : NULL);
            }
            if (r == 0) {
                if (hello && now() < end)
                    continue; /* poll's millisecond rounding */
                hand_over(hello ? "deadline" : NULL);
            }
            if (in.cap - in.n < (1u << 20) + 1) {
                size_t cap = in.cap ? in.cap : (1u << 16);
                while (cap - in.n < (1u << 20) + 1)
                    cap *= 2;
                char *p = realloc(in.p, cap);
                if (!p)
                    hand_over(hello ? "cut_off" : NULL);
                in.p = p;
                in.cap = cap;
            }
            ssize_t got = recv(s, in.p + in.n, 1u << 20, 0);
            if (got < 0) {
                if (errno == EINTR || errno == EAGAIN)
                    continue;
                hand_over(hello ? "cut_off" : NULL);
            }
            if (got == 0)
                hand_over(hello ? "cut_off" : NULL);
            in.n += (size_t)got;
            if (in.n > (size_t)BAY_MAX_ANSWER)
                hand_over("cut_off"); /* hot.py: len(buf) > MAX_ANSWER, hello or not */
            continue;
        }
        size_t len = (size_t)(nl - (in.p + start));
        const char *line = in.p + start;
        start += len + 1;
        if (!hello) {
            if (!keeper_hello((const unsigned char *)line, len))
                hand_over("whole"); /* another version: it ran nothing; Python replaces it */
            hello = 1;
            continue;
        }
        keeper_line(line, len, in.n - (size_t)(line - in.p));
    }
}
