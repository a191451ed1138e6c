/*
 * fuzz_request.c - libFuzzer target: line framing plus request handling.
 *
 * The input is a byte stream as a client would send it. It is fed in
 * pieces through framing_line_feed (the daemon's framing, with a small line
 * limit so the over-long path is reached), and every line goes to
 * methods_line, the real parse/validate/dispatch path of the daemon. The
 * service behind it is in memory with no workers: a queue in a private
 * state folder, and the transport replaced by the stubs below (server.h's
 * functions, with one fake connection whose output is checked to be one
 * JSON-RPC object a line, or a batch's array of them, then thrown away). What a request decodes off
 * the loop thread (decode.c) is finished by running the loop after each
 * input. Jobs a fuzz input manages to submit are removed after each
 * input, so every input starts alike.
 *
 * Linking: these stubs stand in for server.o, which therefore never comes
 * out of libvkinr.a; with no workers (svc.nslots 0) nothing is scheduled.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "proto/framing.h"
#include "log.h"
#include "loop/methods.h"
#include "loop/loop_state.h"

#define FUZZ_LINE_MAX 4096

struct peer_conn {
	uint64_t id;
	int closing;
	size_t sent;
};

static struct peer_conn the_conn = { .id = 1 };
static struct service svc;
static struct daemon_options opt;

/* ------------------------------------------------- transport stubs */

/* Strict UTF-8 (RFC 3629), what every line the daemon sends must be. */
static int utf8_ok(const unsigned char *p, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned c = p[i], lo = 0x80, hi = 0xbf;
		int n = c < 0x80                 ? 0
			: c >= 0xc2 && c <= 0xdf ? 1
			: c >= 0xe0 && c <= 0xef ? 2
			: c >= 0xf0 && c <= 0xf4 ? 3
						 : -1;
		if (n < 0 || len - i <= (size_t)n)
			return 0;
		lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
		hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
		for (int k = 1; k <= n; k++)
			if (p[i + k] < (k == 1 ? lo : 0x80) ||
			    p[i + k] > (k == 1 ? hi : 0xbf))
				return 0;
		i += (size_t)n + 1;
	}
	return 1;
}

int server_send(struct peer_conn *c, char *line)
{
	if (!line)
		return -1;
	/* a batch keeps its answers, to send them as one line (server.c) */
	if (methods_sending(&svc, c, line))
		return 0;
	size_t n = strlen(line);
	/* every line the daemon sends is one JSON object in UTF-8 ending in
	 * '\n', or a batch's answers: an array of one or more of them */
	if (n == 0 || line[n - 1] != '\n' ||
	    !utf8_ok((const unsigned char *)line, n))
		abort();
	cJSON *o = cJSON_ParseWithLength(line, n), *e;
	if (cJSON_IsArray(o)) {
		if (!o->child)
			abort();
		cJSON_ArrayForEach(e, o) if (!cJSON_IsObject(e)) abort();
	} else if (!cJSON_IsObject(o)) {
		abort();
	}
	cJSON_Delete(o);
	c->sent += n;
	free(line);
	return 0;
}

void server_close_after_flush(struct peer_conn *c) { c->closing = 1; }
void server_conn_hold(struct peer_conn *c) {}
void server_conn_release(struct peer_conn *c) {}
void server_conn_close(struct peer_conn *c) { c->closing = 1; }
uint64_t server_conn_id(const struct peer_conn *c) { return c->id; }
uid_t server_conn_uid(const struct peer_conn *c) { return 1000; }
pid_t server_conn_pid(const struct peer_conn *c) { return 4242; }
size_t server_conn_pending(const struct peer_conn *c) { return 0; }
int server_conn_closing(const struct peer_conn *c) { return c->closing; }
int server_connection_count(const struct server *s) { return 1; }
int server_activated(const struct server *s) { return 0; }
void server_cork(struct server *s, int on) {}

struct peer_conn *server_find(struct server *s, uint64_t id)
{
	return id == the_conn.id && !the_conn.closing ? &the_conn : NULL;
}

/* ---------------------------------------------------------- target */

static int on_line(void *ctx, char *line, size_t len, int too_long)
{
	methods_line(&svc, &the_conn, line, len, too_long);
	return the_conn.closing;
}

static void setup(void)
{
	/* tmpfs when there is one: the queue fsyncs every file it writes */
	static char dir[64];
	char err[512];
	snprintf(dir, sizeof(dir), "%s/vkinr-fuzz-request.XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(dir))
		abort();
	opt.state_dir = dir;
	opt.socket_path = "/nonexistent";
	svc.opt = &opt;
	svc.loop = uv_default_loop();
	svc.uid = 0;
	svc.nslots = 0;
	if (queue_create(&svc.queue, dir, err, sizeof(err))) {
		fprintf(stderr, "fuzz_request: %s\n", err);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!svc.queue)
		setup();
	struct line_buffer lb;
	framing_line_init(&lb, FUZZ_LINE_MAX);
	the_conn.closing = 0;
	/* The stream is cut into reads of a size that depends on its length,
	 * so splits inside a line and inside a UTF-8 sequence are covered
	 * while a corpus file stays exactly what a client would send. */
	size_t chunk = size % 64 + 1;
	for (size_t off = 0; off < size; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;
		if (framing_line_feed(&lb, (const char *)data + off, n, on_line,
				      NULL))
			break;
	}
	framing_line_finish(&lb);
	uv_run(svc.loop, UV_RUN_DEFAULT); /* the decodes it started */
	methods_closed(&svc, &the_conn);
	while (svc.queue->head)
		queue_remove(svc.queue, svc.queue->head);
	return 0;
}
