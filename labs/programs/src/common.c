/* common.c: helpers shared by the tutorial programs (see common.h). */
#include "common.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void die(const char *what)
{
	if (errno)
		fprintf(stderr, "error: %s: %s\n", what, strerror(errno));
	else
		fprintf(stderr, "error: %s\n", what);
	exit(1);
}

void dief(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

void buf_info_put(uint8_t out[BUF_INFO_LEN], const struct buf_info *bi)
{
	memcpy(out, "RLAB", 4);
	put_be(out + 4, bi->rkey, 4);
	put_be(out + 8, bi->addr, 8);
	put_be(out + 16, bi->len, 4);
}

int buf_info_get(const void *data, size_t n, struct buf_info *bi)
{
	const uint8_t *p = data;

	/* The REP's private data is padded with zeros to 196 bytes: n is at
	 * least what the server sent, never less. */
	if (!p || n < BUF_INFO_LEN || memcmp(p, "RLAB", 4) != 0)
		return -1;
	bi->rkey = (uint32_t)get_be(p + 4, 4);
	bi->addr = get_be(p + 8, 8);
	bi->len = (uint32_t)get_be(p + 16, 4);
	return 0;
}

struct rdma_cm_event *wait_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != want)
		dief("waiting for %s, got %s (status %d)", rdma_event_str(want),
		     rdma_event_str(ev->event), ev->status);
	return ev;
}

void client_connect(struct conn *c, const char *host, const char *port, struct buf_info *bi)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	struct rdma_cm_event *ev;
	int err;

	if ((err = getaddrinfo(host, port, &hints, &ai)))
		dief("address %s port %s: %s", host, port, gai_strerror(err));
	c->ch = rdma_create_event_channel();
	if (!c->ch)
		die("rdma_create_event_channel");
	if (rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");

	/* Which device and port reach the server? RDMA-CM answers from the
	 * kernel's routing table: the netdev the route leaves by names the
	 * RDMA device (rxe0 over eth1, say). */
	if (rdma_resolve_addr(c->id, NULL, ai->ai_addr, 2000))
		die("rdma_resolve_addr");
	freeaddrinfo(ai);
	rdma_ack_cm_event(wait_event(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(c->id, 2000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(wait_event(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED));

	c->pd = ibv_alloc_pd(c->id->verbs);
	if (!c->pd)
		die("ibv_alloc_pd");
	c->cq = ibv_create_cq(c->id->verbs, 64, NULL, NULL, 0);
	if (!c->cq)
		die("ibv_create_cq");
	struct ibv_qp_init_attr qa = {
		.send_cq = c->cq,
		.recv_cq = c->cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 32, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	if (rdma_create_qp(c->id, c->pd, &qa))
		die("rdma_create_qp");

	/* initiator_depth: how many RDMA READs this side may have in flight;
	 * the server's responder_resources must allow at least as many. */
	struct rdma_conn_param cp = { .initiator_depth = 1, .responder_resources = 1, .retry_count = 7 };
	if (rdma_connect(c->id, &cp))
		die("rdma_connect");
	if (rdma_get_cm_event(c->ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED)
		dief("connect to %s port %s: %s (status %d)", host, port, rdma_event_str(ev->event), ev->status);
	/* The private data lives in the event: read it before the ack frees it. */
	if (buf_info_get(ev->param.conn.private_data, ev->param.conn.private_data_len, bi))
		dief("the server's private data (%u bytes) holds no buffer (no \"RLAB\" magic)",
		     ev->param.conn.private_data_len);
	rdma_ack_cm_event(ev);
	printf("connected: server buffer addr 0x%llx rkey 0x%x len %u\n",
	       (unsigned long long)bi->addr, bi->rkey, bi->len);
}

void client_disconnect(struct conn *c)
{
	if (rdma_disconnect(c->id))
		die("rdma_disconnect");
	rdma_ack_cm_event(wait_event(c->ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(c->id);
	ibv_destroy_cq(c->cq);
	ibv_dealloc_pd(c->pd);
	rdma_destroy_id(c->id);
	rdma_destroy_event_channel(c->ch);
}

void poll_one(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		;
	if (n < 0)
		dief("%s: ibv_poll_cq failed", what);
	if (wc.status != IBV_WC_SUCCESS)
		dief("%s: completion with error: %s", what, ibv_wc_status_str(wc.status));
}

uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		dief("size %s: not a number", s);
	switch (*end) {
	case 'G': v <<= 10; /* fall through */
	case 'M': v <<= 10; /* fall through */
	case 'K': v <<= 10; end++; break;
	}
	if (*end)
		dief("size %s: want a number of bytes, or one with K, M or G", s);
	return v;
}
