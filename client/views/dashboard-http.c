/*
 * dashboard-http.c - the dashboard's web server: libmicrohttpd on
 * 127.0.0.1 only, a thread per connection, serving the page (embedded at
 * build time, Chart.js included), its event stream and a small API.
 *
 *   GET  /                 the page (the token is written into its links)
 *   GET  /dashboard.js, /dashboard.css, /chart.js
 *   GET  /api/events       server-sent events: a snapshot ("reset", then a
 *                          "history" a job), then what changes, live
 *   GET  /api/jobs         the job objects, as JSON
 *   GET  /api/history?job=ID  a job's epochs, as arrays
 *   GET  /api/preview?job=ID  its reconstruction now (job.export), PNG
 *   GET  /api/target?job=ID   its target: the submitted file (own jobs)
 *   POST /api/pause|resume|cancel?job=ID  job.pause, ... as this user
 *
 * Every request is checked before anything else (docs/DASHBOARD.md): the
 * Host header must name the loopback (no DNS rebinding), an Origin header
 * must be this server's, the peer's socket must belong to this user when
 * the kernel says whose it is (/proc/net/tcp), and the token must be given
 * (compared in constant time): in the query or the X-Vkinr-Token header
 * for GET, in the header alone for POST, so that no form or link from
 * another page can change a job. No CORS header is ever sent; a body over
 * DASH_MAX_BODY is refused. The daemon's calls go through a connection of
 * their own, made for the request, so the daemon's own checks apply.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "core/client.h"
#include "core/conn.h"
#include "views/dashboard.h"
#include "core/jobs.h"
#include "proto/errors.h"
#include "proto/protocol.h"
#include "util/base64.h"

#define TOKEN_HEADER "X-Vkinr-Token"
#define KEEPALIVE_S 15
#define TARGET_MAX_BYTES (64u << 20)
#define STREAM_CHUNK (256u << 10) /* events sent at once, at most */

static const char CSP[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'";

/* ---------------------------------------------------------------------- */
/* The token and the checks                                                */
/* ---------------------------------------------------------------------- */

int dash_token_equal(const char *given, const char *token)
{
	size_t n = strlen(token);
	unsigned char diff = 0;

	if (!given || strlen(given) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)given[i] ^ (unsigned char)token[i];
	return diff == 0;
}

static int make_token(char *out, size_t n)
{
	unsigned char raw[24];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t k = getrandom(raw + got, sizeof(raw) - got, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	for (size_t i = 0; i < sizeof(raw) && 2 * i + 2 < n; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

/* Whether a Host header names the loopback: 127.0.0.1, localhost or
 * [::1], with any port (ssh -L may forward from another). */
static int host_ok(const char *host)
{
	static const char *const names[] = { "127.0.0.1", "localhost",
					     "[::1]" };
	if (!host)
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t k = strlen(names[i]);
		if (strncasecmp(host, names[i], k))
			continue;
		const char *p = host + k;
		if (!*p)
			return 1;
		if (*p++ != ':' || !*p || strlen(p) > 5)
			return 0;
		while (isdigit((unsigned char)*p))
			p++;
		return !*p;
	}
	return 0;
}

/*
 * The uid that owns the peer's end of a loopback TCP connection, from
 * /proc/net/tcp (its line whose local address is the peer's and remote
 * port ours); -1 when the kernel does not say (another network namespace).
 */
static long peer_uid(const struct sockaddr *sa, int our_port)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
	char line[512];
	long uid = -1;
	FILE *f;

	if (!sa || sa->sa_family != AF_INET)
		return -1;
	if (!(f = fopen("/proc/net/tcp", "re")))
		return -1;
	while (uid < 0 && fgets(line, sizeof(line), f)) {
		unsigned laddr, lport, raddr, rport, st;
		long u;
		if (sscanf(line, " %*d: %x:%x %x:%x %x %*x:%*x %*x:%*x %*x %ld",
			   &laddr, &lport, &raddr, &rport, &st, &u) != 6)
			continue;
		if (laddr == in->sin_addr.s_addr &&
		    lport == ntohs(in->sin_port) && (int)rport == our_port)
			uid = u;
	}
	fclose(f);
	return uid;
}

/* ---------------------------------------------------------------------- */
/* Answers                                                                 */
/* ---------------------------------------------------------------------- */

static enum MHD_Result send_response(struct MHD_Connection *c, int status,
				     struct MHD_Response *r, const char *type)
{
	enum MHD_Result ok;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Cross-Origin-Resource-Policy",
				"same-origin");
	MHD_add_response_header(r, "Content-Security-Policy", CSP);
	ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result send_copy(struct MHD_Connection *c, int status,
				 const char *type, const void *data,
				 size_t size)
{
	return send_response(c, status,
			     MHD_create_response_from_buffer(
				 size, (void *)data, MHD_RESPMEM_MUST_COPY),
			     type);
}

/* data: malloc'd, handed over. */
static enum MHD_Result send_owned(struct MHD_Connection *c, int status,
				  const char *type, void *data, size_t size)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(size, data, MHD_RESPMEM_MUST_FREE);
	if (!r)
		free(data);
	return send_response(c, status, r, type);
}

/* {"error": text, "code": code} */
static enum MHD_Result send_error(struct MHD_Connection *c, int status,
				  int code, const char *text)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "error", text);
	if (code)
		cJSON_AddNumberToObject(o, "code", code);
	char *json = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!json)
		return MHD_NO;
	return send_owned(c, status, "application/json", json, strlen(json));
}

/* ---------------------------------------------------------------------- */
/* The daemon, for one request                                             */
/* ---------------------------------------------------------------------- */

/* A job id from the query: decimal digits, as the daemon gives them. */
static const char *job_arg(struct MHD_Connection *c)
{
	const char *id =
	    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "job");
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > 16)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)id[i]))
			return NULL;
	return id;
}

/* Calls method on a connection of its own; 0 and *result, or an answer
 * already queued on c (*queued). */
static int call_daemon(struct dash *d, struct MHD_Connection *c,
		       const char *method, const char *id, cJSON **result,
		       enum MHD_Result *queued)
{
	struct client_conn *conn = NULL;
	char why[256], text[600];
	cJSON *params = cJSON_CreateObject();
	int rc;

	cJSON_AddStringToObject(params, "job", id);
	if (conn_open(d->socket, d->timeout_ms, &conn, why, sizeof(why)) < 0) {
		cJSON_Delete(params);
		snprintf(text, sizeof(text), "cannot reach vkinrd at %s (%s)",
			 d->socket, why);
		*queued = send_error(c, MHD_HTTP_BAD_GATEWAY, 0, text);
		return -1;
	}
	rc = conn_call(conn, method, params, result);
	if (rc == CLIENT_ERR_RPC) {
		const char *message;
		int code = conn_last_error(conn, &message, NULL);
		int status = code == RPC_PERMISSION      ? MHD_HTTP_FORBIDDEN
			     : code == RPC_JOB_NOT_FOUND ? MHD_HTTP_NOT_FOUND
			     : code == RPC_JOB_STATE     ? MHD_HTTP_CONFLICT
							 : MHD_HTTP_BAD_GATEWAY;
		*queued = send_error(c, status, code, message);
	} else if (rc < 0) {
		snprintf(text, sizeof(text), "%s: %s", method, conn_why(conn));
		*queued = send_error(c, MHD_HTTP_BAD_GATEWAY, 0, text);
	}
	conn_close(conn);
	return rc < 0 ? -1 : 0;
}

static enum MHD_Result do_action(struct dash *d, struct MHD_Connection *c,
				 const char *method)
{
	const char *id = job_arg(c);
	enum MHD_Result queued;
	cJSON *result = NULL;

	if (!id)
		return send_error(c, MHD_HTTP_BAD_REQUEST, 0,
				  "name the job: ?job=ID");
	if (call_daemon(d, c, method, id, &result, &queued) < 0)
		return queued;
	char *json = cJSON_PrintUnformatted(result);
	cJSON_Delete(result);
	if (!json)
		return MHD_NO;
	return send_owned(c, MHD_HTTP_OK, "application/json", json,
			  strlen(json));
}

static enum MHD_Result do_preview(struct dash *d, struct MHD_Connection *c)
{
	const char *id = job_arg(c), *b64;
	enum MHD_Result queued;
	cJSON *result = NULL;
	uint8_t *png = NULL;
	size_t size;

	if (!id)
		return send_error(c, MHD_HTTP_BAD_REQUEST, 0,
				  "name the job: ?job=ID");
	if (call_daemon(d, c, M_JOB_EXPORT, id, &result, &queued) < 0)
		return queued;
	b64 = job_str(cJSON_GetObjectItemCaseSensitive(result, "recon"), "png",
		      NULL);
	if (!b64 || base64_decode(b64, strlen(b64), &png, &size) < 0) {
		cJSON_Delete(result);
		return send_error(c, MHD_HTTP_BAD_GATEWAY, 0,
				  "the daemon's answer holds no valid PNG");
	}
	cJSON_Delete(result);
	return send_owned(c, MHD_HTTP_OK, "image/png", png, size);
}

/* The target: the file the job was submitted from ("source", a real
 * path), read with this user's permissions, for this user's jobs only. */
static enum MHD_Result do_target(struct dash *d, struct MHD_Connection *c)
{
	const char *id = job_arg(c), *type;
	char *path = NULL, text[1200];
	unsigned char *data;
	unsigned owner = 0;
	struct stat st;
	int fd, found = 0;

	if (!id)
		return send_error(c, MHD_HTTP_BAD_REQUEST, 0,
				  "name the job: ?job=ID");
	pthread_mutex_lock(&d->lock);
	struct dash_job *j = dash_find(d, id);
	if (j && j->obj) {
		found = 1;
		owner = (unsigned)job_num(j->obj, "uid", -1);
		const char *source = job_str(j->obj, "source", NULL);
		path = source ? strdup(source) : NULL;
	}
	pthread_mutex_unlock(&d->lock);
	if (!found)
		return send_error(c, MHD_HTTP_NOT_FOUND, 0, "no such job");
	if (owner != d->uid) {
		free(path);
		return send_error(c, MHD_HTTP_FORBIDDEN, 0,
				  "the target is its owner's");
	}
	if (!path || path[0] != '/') {
		free(path);
		return send_error(c, MHD_HTTP_NOT_FOUND, 0,
				  "the job names no file it came from");
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < 4 || st.st_size > TARGET_MAX_BYTES) {
		snprintf(text, sizeof(text), "%s is not there any more", path);
		if (fd >= 0)
			close(fd);
		free(path);
		return send_error(c, MHD_HTTP_NOT_FOUND, 0, text);
	}
	free(path);
	data = malloc((size_t)st.st_size);
	ssize_t got = data ? read(fd, data, (size_t)st.st_size) : -1;
	close(fd);
	if (got != st.st_size) {
		free(data);
		return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, 0,
				  "reading the target failed");
	}
	if (!memcmp(data, "\x89PNG", 4))
		type = "image/png";
	else if (data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff)
		type = "image/jpeg";
	else {
		free(data);
		return send_error(c, MHD_HTTP_NOT_FOUND, 0,
				  "the job's file is no longer an image");
	}
	return send_owned(c, MHD_HTTP_OK, type, data, (size_t)got);
}

/* ---------------------------------------------------------------------- */
/* The event stream                                                        */
/* ---------------------------------------------------------------------- */

struct stream {
	struct dash *d;
	char *pending;
	size_t off, len;
	unsigned long long next; /* the next event to send */
	int started;
};

/* With the lock held: what is due to s, or NULL when nothing. */
static char *stream_due(struct stream *s)
{
	struct dash *d = s->d;
	unsigned long long oldest =
	    d->next_seq > DASH_RING_EVENTS ? d->next_seq - DASH_RING_EVENTS : 0;
	size_t len = 0;
	char *text;

	if (!s->started || s->next < oldest) {
		s->started = 1; /* first, or fallen behind: all anew */
		return dash_snapshot(d, &s->next);
	}
	if (s->next >= d->next_seq)
		return NULL;
	unsigned long long end = s->next;
	while (end < d->next_seq && len < STREAM_CHUNK)
		len += strlen(d->ring[end++ % DASH_RING_EVENTS].text);
	if (!(text = malloc(len + 1)))
		return NULL;
	len = 0;
	for (; s->next < end; s->next++) {
		const char *e = d->ring[s->next % DASH_RING_EVENTS].text;
		size_t k = strlen(e);
		memcpy(text + len, e, k);
		len += k;
	}
	text[len] = 0;
	return text;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = cls;
	struct dash *d = s->d;

	while (s->off >= s->len) {
		struct timespec until;
		free(s->pending);
		s->pending = NULL;
		s->off = s->len = 0;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += KEEPALIVE_S;
		pthread_mutex_lock(&d->lock);
		while (!d->stopping && !(s->pending = stream_due(s)))
			if (pthread_cond_timedwait(&d->changed, &d->lock,
						   &until) == ETIMEDOUT)
				break;
		int stop = d->stopping;
		pthread_mutex_unlock(&d->lock);
		if (stop)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (!s->pending) /* a comment: finds a reader that left */
			s->pending = strdup(": keepalive\n\n");
		if (!s->pending)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		s->len = strlen(s->pending);
	}
	size_t n = s->len - s->off < max ? s->len - s->off : max;
	memcpy(buf, s->pending + s->off, n);
	s->off += n;
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct stream *s = cls;
	free(s->pending);
	free(s);
}

static enum MHD_Result do_events(struct dash *d, struct MHD_Connection *c)
{
	struct stream *s = calloc(1, sizeof(*s));
	struct MHD_Response *r;

	if (!s)
		return MHD_NO;
	s->d = d;
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
					      stream_read, s, stream_free);
	if (!r) {
		free(s);
		return MHD_NO;
	}
	return send_response(c, MHD_HTTP_OK, r, "text/event-stream");
}

/* ---------------------------------------------------------------------- */
/* Requests                                                                */
/* ---------------------------------------------------------------------- */

struct request {
	size_t body; /* bytes of body so far */
};

static enum MHD_Result serve_asset(struct dash *d, struct MHD_Connection *c,
				   const char *url)
{
	for (const struct dash_asset *a = dash_assets; a->path; a++) {
		if (strcmp(a->path, url))
			continue;
		if (strcmp(url, "/"))
			return send_copy(c, MHD_HTTP_OK, a->type, a->data,
					 a->size);
		/* the page: its links carry the token (@TOKEN@) */
		struct {
			char *p;
			size_t n;
		} out = { malloc(a->size * 2 + 1), 0 };
		if (!out.p)
			return MHD_NO;
		for (size_t i = 0; i < a->size;) {
			if (a->size - i >= 7 &&
			    !memcmp(a->data + i, "@TOKEN@", 7)) {
				memcpy(out.p + out.n, d->token,
				       strlen(d->token));
				out.n += strlen(d->token);
				i += 7;
			} else {
				out.p[out.n++] = (char)a->data[i++];
			}
		}
		return send_owned(c, MHD_HTTP_OK, a->type, out.p, out.n);
	}
	return send_error(c, MHD_HTTP_NOT_FOUND, 0, "no such page");
}

static enum MHD_Result route(struct dash *d, struct MHD_Connection *c,
			     const char *url, int post)
{
	static const struct {
		const char *url, *method;
	} actions[] = { { "/api/pause", M_JOB_PAUSE },
			{ "/api/resume", M_JOB_RESUME },
			{ "/api/cancel", M_JOB_CANCEL } };

	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		if (!strcmp(url, actions[i].url))
			return post ? do_action(d, c, actions[i].method)
				    : send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED,
						 0, "use POST");
	if (post)
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, 0, "use GET");
	if (!strcmp(url, "/api/events"))
		return do_events(d, c);
	if (!strcmp(url, "/api/preview"))
		return do_preview(d, c);
	if (!strcmp(url, "/api/target"))
		return do_target(d, c);
	if (!strcmp(url, "/api/jobs") || !strcmp(url, "/api/history")) {
		const char *id = job_arg(c);
		pthread_mutex_lock(&d->lock);
		char *json = url[5] == 'j' ? dash_jobs_json(d)
			     : id          ? dash_history_json(d, id)
					   : NULL;
		pthread_mutex_unlock(&d->lock);
		if (!json)
			return send_error(c, MHD_HTTP_NOT_FOUND, 0,
					  "no such job");
		return send_owned(c, MHD_HTTP_OK, "application/json", json,
				  strlen(json));
	}
	return serve_asset(d, c, url);
}

/* The checks every request passes first; MHD_YES to go on, else the
 * refusal queued (in *answer). */
static int refused(struct dash *d, struct MHD_Connection *c, int post,
		   enum MHD_Result *answer)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       MHD_HTTP_HEADER_HOST);
	const char *origin = MHD_lookup_connection_value(
	    c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN);
	const char *site =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Site");
	const char *token =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, TOKEN_HEADER);
	const char *length = MHD_lookup_connection_value(
	    c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const union MHD_ConnectionInfo *info =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char self[300];
	long uid;

	if (!host_ok(host)) {
		*answer = send_error(c, MHD_HTTP_FORBIDDEN, 0,
				     "the Host header must name 127.0.0.1 or "
				     "localhost");
		return 1;
	}
	snprintf(self, sizeof(self), "http://%s", host);
	if ((origin && strcasecmp(origin, self)) ||
	    (site && strcmp(site, "same-origin") && strcmp(site, "none"))) {
		*answer = send_error(c, MHD_HTTP_FORBIDDEN, 0,
				     "requests from other sites are refused");
		return 1;
	}
	uid = peer_uid(info ? info->client_addr : NULL, d->port);
	if (uid >= 0 && (unsigned long)uid != d->uid) {
		*answer = send_error(c, MHD_HTTP_FORBIDDEN, 0,
				     "this dashboard serves its own user only");
		return 1;
	}
	if (!post && !token)
		token = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
						    "token");
	if (!dash_token_equal(token, d->token)) {
		*answer = send_error(c, MHD_HTTP_FORBIDDEN, 0,
				     post ? "the token must be given in the "
					    "X-Vkinr-Token header"
					  : "open the URL that `vkinrctl "
					    "dashboard` printed (it holds "
					    "?token=...)");
		return 1;
	}
	if (length && strtoull(length, NULL, 10) > DASH_MAX_BODY) {
		*answer = send_error(c, MHD_HTTP_CONTENT_TOO_LARGE, 0,
				     "the request is too large");
		return 1;
	}
	return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct dash *d = cls;
	struct request *req = *con_cls;
	int post = !strcmp(method, MHD_HTTP_METHOD_POST);
	enum MHD_Result answer;

	if (!req) {
		if (!post && strcmp(method, MHD_HTTP_METHOD_GET) &&
		    strcmp(method, MHD_HTTP_METHOD_HEAD))
			return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, 0,
					  "GET or POST only");
		if (refused(d, c, post, &answer))
			return answer;
		if (!(req = calloc(1, sizeof(*req))))
			return MHD_NO;
		*con_cls = req;
		return MHD_YES; /* the body, if any, comes next */
	}
	if (*upload_data_size) {
		req->body += *upload_data_size;
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (req->body > DASH_MAX_BODY)
		return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE, 0,
				  "the request is too large");
	return route(d, c, url, post);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode code)
{
	free(*con_cls);
	*con_cls = NULL;
}

int dash_http_start(struct dash *d, int port, char *why, size_t whylen)
{
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_port = htons((uint16_t)port),
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	const union MHD_DaemonInfo *info;

	if (make_token(d->token, sizeof(d->token)) < 0) {
		snprintf(why, whylen, "no random bytes for the token: %s",
			 strerror(errno));
		return -1;
	}
	errno = 0;
	d->http = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
	    (uint16_t)port, NULL, NULL, on_request, d, MHD_OPTION_SOCK_ADDR,
	    (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024),
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(4 * KEEPALIVE_S),
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, d, MHD_OPTION_END);
	if (!d->http) {
		snprintf(why, whylen, "cannot listen on 127.0.0.1:%d%s%s", port,
			 errno ? ": " : "", errno ? strerror(errno) : "");
		return -1;
	}
	info = MHD_get_daemon_info(d->http, MHD_DAEMON_INFO_BIND_PORT);
	d->port = info ? info->port : port;
	return 0;
}

void dash_http_stop(struct dash *d)
{
	if (!d->http)
		return;
	pthread_mutex_lock(&d->lock);
	d->stopping = 1;
	pthread_cond_broadcast(&d->changed);
	pthread_mutex_unlock(&d->lock);
	MHD_stop_daemon(d->http);
	d->http = NULL;
}
