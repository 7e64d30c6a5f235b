/*
 * server.c: lends one buffer to one client, then exits.
 *
 *   ./server PORT [SIZE]      (SIZE in bytes, K/M/G allowed; default 4096)
 *
 * The server registers SIZE bytes for remote READ and WRITE, accepts one
 * RDMA-CM connection with the buffer's address and rkey as private data
 * (see common.h for its layout), and posts one receive. A plain RDMA WRITE
 * or READ from the client never shows up here: the server's CPU is not
 * asked. Only a WRITE with immediate consumes the posted receive and makes
 * a completion, which is how a client can say "the data is there" without
 * a separate SEND; the server prints the immediate and checks the bytes.
 * When the client disconnects, the server cleans up and exits 0.
 */
#include "common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

/* check_pattern says whether the first n bytes of buf are the clients'. */
static int check_pattern(const uint8_t *buf, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (buf[i] != pattern_byte(i)) {
			printf("data differs at byte %llu: 0x%02x, want 0x%02x\n",
			       (unsigned long long)i, buf[i], pattern_byte(i));
			return -1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s PORT [SIZE]\n", argv[0]);
		return 2;
	}
	/* Output goes to a pipe under rlab: flush each line, so that a
	 * "ready" pattern sees "listening" when it is true. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	uint64_t size = argc > 2 ? parse_size(argv[2]) : 4096;
	if (size == 0 || size > UINT32_MAX)
		dief("size %llu: want 1 byte to 4 GiB - 1", (unsigned long long)size);

	/* 1. Listen on PORT of every RDMA device's IP address. */
	struct rdma_event_channel *ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	struct rdma_cm_id *listen_id, *id;
	if (rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1])) };
	if (rdma_bind_addr(listen_id, (struct sockaddr *)&sin))
		die("rdma_bind_addr");
	if (rdma_listen(listen_id, 1))
		die("rdma_listen");
	printf("RDMA server listening on port %s, buffer %llu bytes\n", argv[1], (unsigned long long)size);

	/* 2. A client's REQ arrives as CONNECT_REQUEST, with a new cm_id
	 * already bound to the device the REQ came in on. */
	struct rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	rdma_ack_cm_event(ev);

	/* 3. Memory the client may use: REMOTE_WRITE and REMOTE_READ are what
	 * the rkey will grant. */
	struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
	if (!pd)
		die("ibv_alloc_pd");
	uint8_t *buf = calloc(1, size);
	if (!buf)
		die("calloc");
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, size,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		die("ibv_reg_mr");

	/* A completion channel lets us sleep in poll() on the CQ and the CM
	 * events at once, instead of spinning. */
	struct ibv_comp_channel *cc = ibv_create_comp_channel(id->verbs);
	if (!cc)
		die("ibv_create_comp_channel");
	struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, cc, 0);
	if (!cq)
		die("ibv_create_cq");
	if (ibv_req_notify_cq(cq, 0))
		die("ibv_req_notify_cq");
	struct ibv_qp_init_attr qa = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	if (rdma_create_qp(id, pd, &qa))
		die("rdma_create_qp");

	/* 4. The receive a WRITE with immediate will consume. It needs no
	 * buffer: the data goes where the WRITE's RETH says, only the 32-bit
	 * immediate lands in the completion. Post it before accepting, so it
	 * is there before the first packet can be. */
	struct ibv_recv_wr rwr = { .wr_id = 1, .num_sge = 0 }, *bad;
	if (ibv_post_recv(id->qp, &rwr, &bad))
		die("ibv_post_recv");

	/* 5. Accept, handing out the capability: address and rkey. */
	uint8_t pd_bytes[BUF_INFO_LEN];
	struct buf_info bi = { .rkey = mr->rkey, .addr = (uintptr_t)buf, .len = (uint32_t)size };
	buf_info_put(pd_bytes, &bi);
	struct rdma_conn_param cp = {
		.private_data = pd_bytes,
		.private_data_len = sizeof pd_bytes,
		.responder_resources = 1, /* one RDMA READ at a time from the client */
		.initiator_depth = 1,
	};
	if (rdma_accept(id, &cp))
		die("rdma_accept");
	rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
	printf("accepted: buffer addr 0x%llx rkey 0x%x len %u in the private data\n",
	       (unsigned long long)bi.addr, bi.rkey, bi.len);

	/* 6. Wait for a completion or the client's disconnect. */
	int failed = 0, done = 0;
	struct pollfd fds[2] = { { .fd = ch->fd, .events = POLLIN }, { .fd = cc->fd, .events = POLLIN } };
	while (!done) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (fds[1].revents) {
			struct ibv_cq *evcq;
			void *ctx;
			if (ibv_get_cq_event(cc, &evcq, &ctx))
				die("ibv_get_cq_event");
			ibv_ack_cq_events(evcq, 1);
			if (ibv_req_notify_cq(cq, 0))
				die("ibv_req_notify_cq");
		}
		if (fds[0].revents) {
			if (rdma_get_cm_event(ch, &ev))
				die("rdma_get_cm_event");
			done = ev->event == RDMA_CM_EVENT_DISCONNECTED;
			if (!done)
				printf("ignoring %s\n", rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
		}
		/* Poll the CQ every round: a completion may have arrived just
		 * before the disconnect. */
		struct ibv_wc wc;
		while (ibv_poll_cq(cq, 1, &wc) > 0) {
			if (wc.status == IBV_WC_WR_FLUSH_ERR)
				continue; /* the unused receive, flushed at disconnect */
			if (wc.status != IBV_WC_SUCCESS) {
				printf("completion with error: %s\n", ibv_wc_status_str(wc.status));
				failed = 1;
				continue;
			}
			if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
				/* imm_data is in network byte order, as on the wire. */
				printf("RDMA server got immediate 0x%08x (%u bytes written)\n", ntohl(wc.imm_data), wc.byte_len);
				if (check_pattern(buf, wc.byte_len) == 0)
					printf("immediate data matches\n");
				else
					failed = 1;
			}
		}
	}
	printf("client disconnected\n");

	rdma_destroy_qp(id);
	ibv_destroy_cq(cq);
	ibv_destroy_comp_channel(cc);
	ibv_dereg_mr(mr);
	free(buf);
	ibv_dealloc_pd(pd);
	rdma_destroy_id(id);
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ch);
	return failed;
}
