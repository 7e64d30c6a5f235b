/*
 * bulk_client.c: a bulk one-sided transfer, timed.
 *
 *   ./bulk_client SERVER PORT [BYTES [CHUNK]]   (default 1G in 4M chunks)
 *
 * Writes BYTES into the server's buffer in CHUNK-sized RDMA WRITEs (the
 * server's buffer must hold a chunk: run it as "./server PORT 4M"), each
 * chunk over the same remote bytes, keeping up to DEPTH writes in flight,
 * and prints
 *
 *   RDMA client wrote <bytes> bytes in <s> s (<x> MiB/s)
 *
 * timed from the first post to the last completion. Beside a TCP stream of
 * the same size this is the RDMA vs TCP table; on soft RoCE both are CPU
 * bound, so the table says more about copies than about wires.
 */
#include "common.h"

#include <stdlib.h>
#include <time.h>

#define DEPTH 16

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: %s SERVER PORT [BYTES [CHUNK]]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	uint64_t total = argc > 3 ? parse_size(argv[3]) : 1ULL << 30;
	uint64_t chunk = argc > 4 ? parse_size(argv[4]) : 4ULL << 20;
	if (total == 0 || chunk == 0 || chunk > UINT32_MAX)
		dief("bytes %llu, chunk %llu: want both above 0, the chunk below 4 GiB",
		     (unsigned long long)total, (unsigned long long)chunk);
	struct conn c;
	struct buf_info bi;
	client_connect(&c, argv[1], argv[2], &bi);
	if (chunk > bi.len)
		dief("chunk %llu: the server lends %u bytes (run it with a SIZE of at least the chunk)",
		     (unsigned long long)chunk, bi.len);

	uint8_t *out = malloc(chunk);
	if (!out)
		die("malloc");
	for (uint64_t i = 0; i < chunk; i++)
		out[i] = pattern_byte(i);
	struct ibv_mr *mr = ibv_reg_mr(c.pd, out, chunk, 0);
	if (!mr)
		die("ibv_reg_mr");

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	uint64_t posted = 0, done = 0;
	int inflight = 0;
	while (done < total) {
		/* Keep the send queue full: a WRITE at a time would measure the
		 * round trip, not the transfer. */
		while (inflight < DEPTH && posted < total) {
			uint64_t n = total - posted < chunk ? total - posted : chunk;
			struct ibv_sge sge = { .addr = (uintptr_t)out, .length = (uint32_t)n, .lkey = mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = n,
				.opcode = IBV_WR_RDMA_WRITE,
				.sg_list = &sge,
				.num_sge = 1,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { .remote_addr = bi.addr, .rkey = bi.rkey },
			}, *bad;
			if (ibv_post_send(c.id->qp, &wr, &bad))
				die("ibv_post_send RDMA_WRITE");
			posted += n;
			inflight++;
		}
		struct ibv_wc wc[DEPTH];
		int got = ibv_poll_cq(c.cq, DEPTH, wc);
		if (got < 0)
			dief("ibv_poll_cq failed");
		for (int i = 0; i < got; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				dief("RDMA_WRITE after %llu bytes: completion with error: %s",
				     (unsigned long long)done, ibv_wc_status_str(wc[i].status));
			done += wc[i].wr_id;
			inflight--;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("RDMA client wrote %llu bytes in %.3f s (%.2f MiB/s)\n",
	       (unsigned long long)total, s, (double)total / (1 << 20) / s);

	ibv_dereg_mr(mr);
	free(out);
	client_disconnect(&c);
	return 0;
}
