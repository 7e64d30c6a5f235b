/*
 * imm_client.c: an RDMA WRITE with immediate data, the one-sided write
 * that the other side hears about.
 *
 *   ./imm_client SERVER PORT [IMM [SIZE]]    (IMM default 0x1234abcd)
 *
 * The data goes into the server's buffer like a plain WRITE; the 32-bit
 * immediate travels in the last packet's ImmDt header and consumes the
 * receive the server posted, so the server gets a completion carrying it
 * (the server prints "RDMA server got immediate 0x..."). The completion
 * comes after the data is in place: a "ready" signal for a rendezvous.
 *
 * rxe does this; siw does not: rdma-core's siw provider refuses
 * IBV_WR_RDMA_WRITE_WITH_IMM (and the atomics) when the work request is
 * posted, as iWARP has no immediate data (ibv_post_send fails, EINVAL).
 */
#include "common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: %s SERVER PORT [IMM [SIZE]]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	uint32_t imm = 0x1234abcd;
	if (argc > 3) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(argv[3], &end, 0);
		if (errno || *end || end == argv[3] || v > UINT32_MAX)
			dief("immediate %s: want a 32-bit number", argv[3]);
		imm = (uint32_t)v;
	}
	struct conn c;
	struct buf_info bi;
	client_connect(&c, argv[1], argv[2], &bi);
	uint64_t n = argc > 4 ? parse_size(argv[4]) : bi.len;
	if (n == 0 || n > bi.len)
		dief("size %llu: the server lends %u bytes", (unsigned long long)n, bi.len);

	uint8_t *out = malloc(n);
	if (!out)
		die("malloc");
	for (uint64_t i = 0; i < n; i++)
		out[i] = pattern_byte(i);
	struct ibv_mr *mr = ibv_reg_mr(c.pd, out, n, 0);
	if (!mr)
		die("ibv_reg_mr");
	struct ibv_sge sge = { .addr = (uintptr_t)out, .length = (uint32_t)n, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.sg_list = &sge,
		.num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(imm), /* network byte order, as it goes on the wire */
		.wr.rdma = { .remote_addr = bi.addr, .rkey = bi.rkey },
	}, *bad;
	if (ibv_post_send(c.id->qp, &wr, &bad))
		die("ibv_post_send RDMA_WRITE_WITH_IMM (siw refuses it: rxe only)");
	poll_one(c.cq, "RDMA_WRITE_WITH_IMM");
	printf("RDMA_WRITE_WITH_IMM complete: %llu bytes, immediate 0x%08x\n", (unsigned long long)n, imm);

	ibv_dereg_mr(mr);
	free(out);
	client_disconnect(&c);
	return 0;
}
