/*
 * client.c: the capability lesson. WRITE into the server's memory, READ it
 * back, and check that the READ returns what the WRITE put.
 *
 *   ./client SERVER PORT [SIZE]     (default: the whole server buffer)
 *
 * Prints "RDMA_WRITE complete" and "RDMA_READ matches", exits non-zero on
 * any failure (a READ that differs included).
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

/* post_rdma posts one signaled RDMA WRITE or READ of n bytes between the
 * local mr and the remote buffer, and waits for its completion. */
static void post_rdma(struct conn *c, enum ibv_wr_opcode op, struct ibv_mr *mr, uint32_t n, const struct buf_info *bi)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = n, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.opcode = op,
		.sg_list = &sge,
		.num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
		/* The RETH of the request packet carries these two: the
		 * capture shows the same address and rkey the REP did. */
		.wr.rdma = { .remote_addr = bi->addr, .rkey = bi->rkey },
	}, *bad;
	if (ibv_post_send(c->id->qp, &wr, &bad))
		die(op == IBV_WR_RDMA_WRITE ? "ibv_post_send RDMA_WRITE" : "ibv_post_send RDMA_READ");
	poll_one(c->cq, op == IBV_WR_RDMA_WRITE ? "RDMA_WRITE" : "RDMA_READ");
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s SERVER PORT [SIZE]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct conn c;
	struct buf_info bi;
	client_connect(&c, argv[1], argv[2], &bi);
	uint64_t n = argc > 3 ? parse_size(argv[3]) : bi.len;
	if (n == 0 || n > bi.len)
		dief("size %llu: the server lends %u bytes", (unsigned long long)n, bi.len);

	/* Two local buffers, so that the READ cannot pass by finding the
	 * pattern still sitting where the WRITE took it from. */
	uint8_t *out = malloc(n), *in = calloc(1, n);
	if (!out || !in)
		die("malloc");
	for (uint64_t i = 0; i < n; i++)
		out[i] = pattern_byte(i);
	struct ibv_mr *wmr = ibv_reg_mr(c.pd, out, n, 0);
	/* The READ's responses are written into "in" by the NIC: LOCAL_WRITE. */
	struct ibv_mr *rmr = ibv_reg_mr(c.pd, in, n, IBV_ACCESS_LOCAL_WRITE);
	if (!wmr || !rmr)
		die("ibv_reg_mr");

	post_rdma(&c, IBV_WR_RDMA_WRITE, wmr, (uint32_t)n, &bi);
	printf("RDMA_WRITE complete: %llu bytes to addr 0x%llx rkey 0x%x\n",
	       (unsigned long long)n, (unsigned long long)bi.addr, bi.rkey);

	post_rdma(&c, IBV_WR_RDMA_READ, rmr, (uint32_t)n, &bi);
	if (memcmp(in, out, n) != 0) {
		for (uint64_t i = 0; i < n; i++)
			if (in[i] != out[i])
				dief("RDMA_READ differs at byte %llu: 0x%02x, wrote 0x%02x",
				     (unsigned long long)i, in[i], out[i]);
	}
	printf("RDMA_READ matches: %llu bytes read back\n", (unsigned long long)n);

	ibv_dereg_mr(wmr);
	ibv_dereg_mr(rmr);
	free(out);
	free(in);
	client_disconnect(&c);
	return 0;
}
