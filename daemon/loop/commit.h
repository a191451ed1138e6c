/*
 * commit.h - what the loop writes in one turn, made durable by one sync
 * before any of its answers go out (a group commit).
 *
 * A submission stores five files, and a drain of the workers' events may
 * rewrite a state.json for each of a pack's jobs; with two fsyncs a file
 * that was the daemon's largest cost a job. Code that is about to write
 * calls commit_open: from then until the end of the loop's turn the
 * writes leave out their fsyncs (fileio_batch_begin), and everything the
 * daemon sends is held (server_cork). At the end of the turn (a uv_check
 * handle) one syncfs makes it all durable and the answers go out, so no
 * client hears of a change before it is on disk. Requests that arrive
 * together (clients that send several at once) share the sync.
 */
#ifndef VKINR_LOOP_COMMIT_H
#define VKINR_LOOP_COMMIT_H

struct service;

void commit_init(struct service *svc);
/* Opens the turn's group, if not open yet. */
void commit_open(struct service *svc);
/* The open group holds an answer that a client waits on (a pause or a
 * cancel of a running job): commit_flush lets it out. */
void commit_urgent(struct service *svc);
/* When the open group holds such an answer, it is synced and its output
 * let go now, and a new group opened for the rest of the turn: the
 * answer does not wait for a long turn's other work (the jobs started
 * after a pack's boundary). */
void commit_flush(struct service *svc);
/* The group synced and its output let go now (at a stop), and the
 * handles closed. */
void commit_finish(struct service *svc);

#endif
