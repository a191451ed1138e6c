/*
 * protocol.h - the wire protocol between vkinrd and its clients, in one
 * place: version, method and notification names, error codes and limits.
 * proto/PROTOCOL.md is the prose for people; this is what the code uses.
 *
 * Bump PROTOCOL_VERSION on purpose whenever a message changes shape; add
 * methods and fields freely (clients ignore fields they don't know).
 *
 * Framing: NDJSON over a Unix stream socket, one JSON-RPC 2.0 object per
 * line ended by '\n'.
 */
#ifndef VKINR_PROTOCOL_H
#define VKINR_PROTOCOL_H

#define PROTOCOL_VERSION 1
#define VKINR_VERSION "0.1.0"

/* Methods (client to daemon). */
#define M_HELLO "hello"
#define M_DAEMON_STATUS "daemon.status"
#define M_JOB_SUBMIT "job.submit"
#define M_JOB_LIST "job.list"
#define M_JOB_GET "job.get"
#define M_JOB_LOGS "job.logs"
#define M_JOB_PAUSE "job.pause"
#define M_JOB_RESUME "job.resume"
#define M_JOB_CANCEL "job.cancel"
#define M_JOB_REMOVE "job.remove"
#define M_JOB_RETRY "job.retry"
#define M_JOB_RENICE "job.renice"
#define M_JOB_EXPORT "job.export"
#define M_JOB_SUBSCRIBE "job.subscribe"
#define M_JOB_UNSUBSCRIBE "job.unsubscribe"
#define M_MODEL_RENDER "model.render"

/* Notifications (daemon to client). */
#define N_JOB_PROGRESS "job.progress"
#define N_JOB_STATE "job.state"

/* Job states. */
#define S_QUEUED "queued"
#define S_RUNNING "running"
#define S_PAUSED "paused"
#define S_DONE "done"
#define S_FAILED "failed"
#define S_CANCELLED "cancelled"

/* JSON-RPC error codes: the standard ones, then the project's own. The
 * error's "data" carries {"name": error_name(...)} and, for a limit, the
 * limit's name and value. */
#define RPC_PARSE_ERROR -32700
#define RPC_INVALID_REQUEST -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS -32602
#define RPC_INTERNAL_ERROR -32603
#define RPC_JOB_NOT_FOUND -32001 /* no job with that id */
#define RPC_JOB_STATE -32002     /* not allowed in the job's state */
#define RPC_BAD_IMAGE -32003     /* the image was refused */
#define RPC_LIMIT -32004         /* a documented limit was exceeded */
#define RPC_PERMISSION -32005    /* the job belongs to another user */
#define RPC_BAD_MODEL -32006     /* the model package was refused */
#define RPC_DEVICE -32007        /* the device failed the request */
#define RPC_SHUTTING_DOWN -32008 /* the daemon is stopping */

/* Documented limits (PROTOCOL.md, vkinrd(8)). */
#define LIMIT_LINE_BYTES (64u << 20) /* one request line, base64 included */
#define LIMIT_CONNECTIONS 256        /* open connections in all */
#define LIMIT_CONNECTIONS_PER_UID 64
#define LIMIT_JOBS_PER_UID 1000 /* jobs kept (any state) per uid */
#define JOB_LIST_IDS_MAX 100000 /* ids in job.list's "jobs" */
#define LIMIT_REQUESTS_PER_UID                                                 \
	8 /* renders and exports of one uid
					   waiting for a worker */
#define LIMIT_SUBSCRIBER_BYTES                                                 \
	(1u << 20)                               /* output queued to one client
						  before its next request waits */
#define LIMIT_PARTIAL_BYTES_PER_UID (128u << 20) /* unfinished lines, per uid */
#define LIMIT_PARTIAL_BYTES (256u << 20)         /* unfinished lines, in all */
/* What one uid's jobs may hold in the state folder: bytes, files. */
#define LIMIT_DISK_BYTES_PER_UID (8ull << 30)
#define LIMIT_DISK_FILES_PER_UID 20000

#endif
