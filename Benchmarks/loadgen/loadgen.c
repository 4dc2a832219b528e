/*
 * loadgen: sends exactly TOTAL HTTP/1.1 requests over CONNECTIONS keep-alive connections
 * with a plain epoll loop, one request in flight per connection, and reports the rate and
 * latency percentiles. Used by `make bench`.
 *
 * usage: loadgen HOST PORT CONNECTIONS TOTAL TEMPLATE_FILE EXPECTED_STATUS ID_PREFIX
 *   TEMPLATE_FILE: first line "METHOD PATH", then header lines, a blank line, then the body.
 *   Every "{{ID}}" in the path and body becomes ID_PREFIX-<request number>.
 * Prints one JSON object: requests, seconds, rate, p50_ms, p99_ms, bad.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int fd;
    char out[16384];
    size_t out_length, out_sent;
    char in[16384];
    size_t in_length;
    double sent_at;
    int busy;
} connection;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Copies `source` into `target`, replacing each {{ID}} with `id`. Returns the length. */
static size_t substitute(char *target, size_t capacity, const char *source, const char *id) {
    size_t length = 0, id_length = strlen(id);
    while (*source && length + id_length < capacity) {
        if (strncmp(source, "{{ID}}", 6) == 0) {
            memcpy(target + length, id, id_length);
            length += id_length;
            source += 6;
        } else {
            target[length++] = *source++;
        }
    }
    target[length] = 0;
    return length;
}

static char *method_path, *headers, *body;
static const char *host, *prefix;
static int port;

static void send_all(connection *c) {
    while (c->out_sent < c->out_length) {
        ssize_t w = write(c->fd, c->out + c->out_sent, c->out_length - c->out_sent);
        if (w > 0) c->out_sent += (size_t)w;
        else if (errno != EAGAIN && errno != EINTR) { perror("write"); exit(2); }
    }
}

static void prepare(connection *c, long number) {
    char id[128], line[2048], payload[8192];
    snprintf(id, sizeof id, "%s-%ld", prefix, number);
    substitute(line, sizeof line, method_path, id);
    size_t body_length = substitute(payload, sizeof payload, body, id);
    char *space = strchr(line, ' ');
    *space = 0;
    c->out_length = (size_t)snprintf(c->out, sizeof c->out,
        "%s %s HTTP/1.1\r\nHost: %s:%d\r\n%sContent-Length: %zu\r\n\r\n%s", line, space + 1, host, port, headers, body_length, payload);
    c->out_sent = 0;
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: loadgen HOST PORT CONNECTIONS TOTAL TEMPLATE_FILE EXPECTED_STATUS ID_PREFIX\n");
        return 2;
    }
    host = argv[1];
    port = atoi(argv[2]);
    int count = atoi(argv[3]);
    long total = atol(argv[4]);
    int expected = atoi(argv[6]);
    prefix = argv[7];

    FILE *file = fopen(argv[5], "rb");
    if (!file) { perror(argv[5]); return 2; }
    static char template[16384];
    size_t template_length = fread(template, 1, sizeof template - 1, file);
    template[template_length] = 0;
    fclose(file);
    char *end_of_first = strchr(template, '\n');
    *end_of_first = 0;
    method_path = template;
    headers = end_of_first + 1;
    char *blank = strstr(headers, "\n\n");
    if (!blank) { fprintf(stderr, "template needs a blank line before the body\n"); return 2; }
    blank[1] = 0;
    body = blank + 2;
    /* Header lines end in \n in the file; HTTP wants \r\n. */
    static char crlf_headers[8192];
    size_t h = 0;
    for (char *p = headers; *p; p++) {
        if (*p == '\n') crlf_headers[h++] = '\r';
        crlf_headers[h++] = *p;
    }
    crlf_headers[h] = 0;
    headers = crlf_headers;
    size_t body_length = strlen(body);
    while (body_length > 0 && (body[body_length - 1] == '\n' || body[body_length - 1] == '\r')) body[--body_length] = 0;

    connection *connections = calloc((size_t)count, sizeof(connection));
    double *latencies = malloc(sizeof(double) * (size_t)total);
    int epoll = epoll_create1(0);
    long started = 0, finished = 0, bad = 0;
    double start = now_ms();
    for (int i = 0; i < count; i++) {
        connection *c = &connections[i];
        c->fd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
        inet_pton(AF_INET, host, &address.sin_addr);
        if (connect(c->fd, (struct sockaddr *)&address, sizeof address) < 0) { perror("connect"); return 2; }
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
        struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(epoll, EPOLL_CTL_ADD, c->fd, &event);
        if (started < total) {
            prepare(c, ++started);
            c->busy = 1;
            c->sent_at = now_ms();
            send_all(c);
        }
    }
    struct epoll_event events[256];
    while (finished < total) {
        int n = epoll_wait(epoll, events, 256, 10000);
        if (n == 0) { fprintf(stderr, "loadgen: no progress for 10 s\n"); break; }
        for (int e = 0; e < n; e++) {
            connection *c = &connections[events[e].data.u32];
            for (;;) {
                ssize_t r = read(c->fd, c->in + c->in_length, sizeof c->in - 1 - c->in_length);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                    fprintf(stderr, "loadgen: the server closed a connection after %ld answers\n", finished);
                    return 1;
                }
                if (r < 0) break;
                c->in_length += (size_t)r;
                c->in[c->in_length] = 0;
                char *head_end = strstr(c->in, "\r\n\r\n");
                if (!head_end) continue;
                char *length_header = strcasestr(c->in, "\r\ncontent-length:");
                size_t content = length_header && length_header < head_end ? (size_t)atol(length_header + 17) : 0;
                size_t whole = (size_t)(head_end + 4 - c->in) + content;
                if (c->in_length < whole) continue;
                int status = atoi(c->in + 9);
                if (status != expected) {
                    if (bad < 3) fprintf(stderr, "loadgen: status %d: %.200s\n", status, head_end + 4);
                    bad++;
                }
                latencies[finished++] = now_ms() - c->sent_at;
                memmove(c->in, c->in + whole, c->in_length - whole);
                c->in_length -= whole;
                c->busy = 0;
                if (started < total) {
                    prepare(c, ++started);
                    c->busy = 1;
                    c->sent_at = now_ms();
                    send_all(c);
                }
            }
        }
    }
    double seconds = (now_ms() - start) / 1000;
    qsort(latencies, (size_t)finished, sizeof(double), compare);
    printf("{\"requests\":%ld,\"seconds\":%.4f,\"rate\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"bad\":%ld}\n", finished, seconds,
        finished / seconds, finished ? latencies[(finished - 1) / 2] : -1, finished ? latencies[(long)((finished - 1) * 0.99)] : -1, bad);
    return finished == total && bad == 0 ? 0 : 1;
}
