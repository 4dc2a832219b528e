/*
 * fanout: opens N Server-Sent-Events subscriptions with a plain epoll loop, publishes one
 * message, and reports when each subscriber received it. Used by `make bench` to measure
 * the local hub and nginx+nchan the same way.
 *
 * usage: fanout HOST PORT SUBSCRIBE_PATH_FORMAT N SUB_HEADER PUBLISH_PATH PUB_HEADERS_FILE PUB_BODY_FILE MARKER [FIRST [ROUNDS]]
 *   SUBSCRIBE_PATH_FORMAT may hold one %064x, replaced by FIRST + the subscriber's index (a device token).
 *   SUB_HEADER is one extra header line for subscriptions, or "-".
 *   PUB_HEADERS_FILE holds extra header lines for the publish request ("Name: value\r\n" each).
 *   ROUNDS (default 1, at most 100) publishes that many times on the same subscriptions, one after the other
 *   finished and 100 ms of quiet; the marker and body then end in the round's number, two
 *   digits, in place of their last two characters.
 * Prints one JSON object per round: subscribers, received, last_ms, p50_ms, p99_ms, publish_status.
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
    int headers_done;
    double arrived;
    size_t used;
    char buffer[8192];
} subscriber;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static int connect_to(const char *host, int port, int nonblocking) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) { perror("socket"); exit(2); }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in address = {0};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    inet_pton(AF_INET, host, &address.sin_addr);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) < 0) { perror("connect"); exit(2); }
    if (nonblocking) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static void write_all(int fd, const char *data, size_t length) {
    while (length > 0) {
        ssize_t n = write(fd, data, length);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) continue;
            perror("write");
            exit(2);
        }
        data += n;
        length -= (size_t)n;
    }
}

static char *read_file(const char *path, size_t *length) {
    FILE *file = fopen(path, "rb");
    if (!file) { perror(path); exit(2); }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *data = malloc((size_t)size + 1);
    if (fread(data, 1, (size_t)size, file) != (size_t)size) { perror("fread"); exit(2); }
    data[size] = 0;
    fclose(file);
    *length = (size_t)size;
    return data;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 10 || argc > 12) {
        fprintf(stderr, "usage: fanout HOST PORT SUB_PATH_FORMAT N SUB_HEADER PUB_PATH PUB_HEADERS_FILE PUB_BODY_FILE MARKER [FIRST [ROUNDS]]\n");
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]);
    const char *format = argv[3];
    int count = atoi(argv[4]);
    const char *sub_header = argv[5];
    const char *pub_path = argv[6];
    size_t pub_headers_length, body_length;
    char *pub_headers = read_file(argv[7], &pub_headers_length);
    char *body = read_file(argv[8], &body_length);
    const char *marker = argv[9];
    unsigned first = argc >= 11 ? (unsigned)atoi(argv[10]) : 0;

    subscriber *subs = calloc((size_t)count, sizeof(subscriber));
    int epoll = epoll_create1(0);
    char request[2048], path[1024];
    for (int i = 0; i < count; i++) {
        subs[i].fd = connect_to(host, port, 1);
        snprintf(path, sizeof path, format, first + (unsigned)i);
        int length = snprintf(request, sizeof request,
            "GET %s HTTP/1.1\r\nHost: %s:%d\r\nAccept: text/event-stream\r\n%s%s\r\n", path, host, port,
            strcmp(sub_header, "-") ? sub_header : "", strcmp(sub_header, "-") ? "\r\n" : "");
        write_all(subs[i].fd, request, (size_t)length);
        struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(epoll, EPOLL_CTL_ADD, subs[i].fd, &event);
    }

    /* The marker's last two characters, in the marker and in the body, become the round's number. */
    int rounds = argc == 12 ? atoi(argv[11]) : 1;
    if (rounds < 1 || rounds > 100) {
        fprintf(stderr, "fanout: ROUNDS must be 1 to 100 (its markers are two digits)\n");
        return 2;
    }
    char *round_marker = strdup(marker);
    size_t marker_length = strlen(marker);
    char *in_body = strstr(body, marker);
    if (rounds > 1 && (marker_length < 2 || !in_body)) {
        fprintf(stderr, "fanout: with ROUNDS the body must hold the marker\n");
        return 2;
    }

    struct epoll_event events[256];
    int ready = 0, all_received = 1;
    double *times = malloc(sizeof(double) * (size_t)count);
    for (int round = 0; round < rounds; round++) {
        if (rounds > 1) {
            char digits[3];
            snprintf(digits, sizeof digits, "%02d", round);
            memcpy(round_marker + marker_length - 2, digits, 2);
            memcpy(in_body + marker_length - 2, digits, 2);
        }
        for (int i = 0; i < count; i++) subs[i].arrived = 0;
        int received = 0;
        double deadline = now_ms() + 30000, start = 0, quiet_until = 0;
        int published = 0, publish_status = 0, publisher = -1;
        while (now_ms() < deadline) {
            if (received == count) {
                /* Done: before another round, 100 ms of quiet, so that it starts on an idle server. */
                if (round == rounds - 1) break;
                if (quiet_until == 0) quiet_until = now_ms() + 100;
                if (now_ms() >= quiet_until) break;
            }
            if (!published && ready == count) {
                /* Every subscription is open: publish on a separate connection. */
                publisher = connect_to(host, port, 0);
                int length = snprintf(request, sizeof request,
                    "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Length: %zu\r\nConnection: close\r\n%.*s\r\n", pub_path, host,
                    port, body_length, (int)pub_headers_length, pub_headers);
                start = now_ms();
                write_all(publisher, request, (size_t)length);
                write_all(publisher, body, body_length);
                fcntl(publisher, F_SETFL, fcntl(publisher, F_GETFL) | O_NONBLOCK);
                struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)count};
                epoll_ctl(epoll, EPOLL_CTL_ADD, publisher, &event);
                published = 1;
            }
            int n = epoll_wait(epoll, events, 256, 10);
            double at = now_ms();
            for (int e = 0; e < n; e++) {
                if (events[e].data.u32 == (uint32_t)count) {
                    /* The publish answer: read its status, then stop watching. */
                    char reply[1024];
                    ssize_t got = read(publisher, reply, sizeof reply - 1);
                    if (got > 12 && publish_status == 0) { reply[got] = 0; publish_status = atoi(reply + 9); }
                    if (got <= 0) { epoll_ctl(epoll, EPOLL_CTL_DEL, publisher, NULL); close(publisher); publisher = -1; }
                    continue;
                }
                subscriber *s = &subs[events[e].data.u32];
                for (;;) {
                    if (s->used == sizeof s->buffer - 1) {
                        /* Keep only the recent bytes, enough for a marker split across reads. */
                        memmove(s->buffer, s->buffer + s->used - 1024, 1024);
                        s->used = 1024;
                    }
                    ssize_t got = read(s->fd, s->buffer + s->used, sizeof s->buffer - 1 - s->used);
                    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
                        /* The server closed the stream: stop watching it. */
                        epoll_ctl(epoll, EPOLL_CTL_DEL, s->fd, NULL);
                        break;
                    }
                    if (got < 0) break;
                    s->used += (size_t)got;
                    s->buffer[s->used] = 0;
                    if (!s->headers_done && strstr(s->buffer, "\r\n\r\n")) {
                        s->headers_done = 1;
                        ready++;
                    }
                    if (published && s->arrived == 0 && strstr(s->buffer, round_marker)) {
                        s->arrived = at - start;
                        received++;
                        s->used = 0;
                    }
                }
            }
        }
        if (publisher >= 0) { epoll_ctl(epoll, EPOLL_CTL_DEL, publisher, NULL); close(publisher); }
        int k = 0;
        for (int i = 0; i < count; i++) if (subs[i].arrived > 0) times[k++] = subs[i].arrived;
        qsort(times, (size_t)k, sizeof(double), compare);
        double last = k ? times[k - 1] : -1;
        double p50 = k ? times[(k - 1) / 2] : -1;
        double p99 = k ? times[(int)((k - 1) * 0.99)] : -1;
        printf("{\"subscribers\":%d,\"ready\":%d,\"received\":%d,\"last_ms\":%.3f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"publish_status\":%d}\n",
            count, ready, received, last, p50, p99, publish_status);
        fflush(stdout);
        if (received != count) all_received = 0;
    }
    return all_received ? 0 : 1;
}
