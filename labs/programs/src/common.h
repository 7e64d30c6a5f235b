/*
 * common.h: what the tutorial programs share.
 *
 * Every program here follows the same RDMA-CM script:
 *
 *   server                                client
 *   ------                                ------
 *   rdma_create_id, rdma_bind_addr,
 *   rdma_listen   (prints "listening")
 *                                         rdma_resolve_addr, rdma_resolve_route
 *                                         rdma_connect            -> CM REQ
 *   CONNECT_REQUEST event
 *   register a buffer, create the QP,
 *   rdma_accept with the buffer's          <- CM REP carries the private data
 *   address and rkey as private data
 *                                         ESTABLISHED event: read the private
 *                                         data, now the client may WRITE and
 *                                         READ that buffer         -> CM RTU
 *   ...                                   rdma_disconnect          -> CM DREQ
 *   DISCONNECTED event: clean up, exit    DISCONNECTED event: clean up, exit
 *
 * The private data is the "capability" of the capability lesson: whoever
 * holds the address and the rkey may read and write the server's memory,
 * without the server's CPU taking part.
 */
#ifndef RLAB_COMMON_H
#define RLAB_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <rdma/rdma_cma.h>

/*
 * struct buf_info travels in the REP's private data (rdma_accept's
 * conn_param.private_data). It is written byte by byte in network order
 * (big-endian), so that both ends agree whatever their CPUs, and so that a
 * capture decoder (rlab pcap) can find it: 4 bytes of magic "RLAB", the
 * rkey (4 bytes), the buffer's virtual address (8) and its length (4).
 */
#define BUF_INFO_LEN 20
struct buf_info {
	uint32_t rkey;
	uint64_t addr;
	uint32_t len;
};
void buf_info_put(uint8_t out[BUF_INFO_LEN], const struct buf_info *bi);
int buf_info_get(const void *data, size_t n, struct buf_info *bi);

/* die prints what failed (and errno's text when set) and exits 1. */
void die(const char *what);
/* dief is die with a formatted message and no errno. */
void dief(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * wait_event waits for the next event on ch, dies unless it is want, and
 * returns it (the caller must rdma_ack_cm_event it).
 */
struct rdma_cm_event *wait_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want);

/* client_connect resolves host:port, creates a QP on a fresh PD and CQ and
 * connects; on return *bi holds the server's buffer. */
struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};
void client_connect(struct conn *c, const char *host, const char *port, struct buf_info *bi);
void client_disconnect(struct conn *c);

/* poll_one busy-polls cq for one completion and dies unless it succeeded. */
void poll_one(struct ibv_cq *cq, const char *what);

/* The pattern the clients write: byte i of a run, seeded so that a stale
 * buffer (all zeros) or one shifted by a byte does not pass for it. */
static inline uint8_t pattern_byte(uint64_t i) { return (uint8_t)(i * 7 + 13); }

/* parse_size reads a byte count (a decimal number, optionally with K, M or
 * G for KiB, MiB or GiB) and dies on anything else. */
uint64_t parse_size(const char *s);

#endif
