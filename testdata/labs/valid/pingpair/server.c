/* A tiny TCP server for rlab's program tests: listens on the port given,
 * says "listening", answers one client's line with "pong <line>", prints
 * "served N bytes", then waits for stdin to close (as many tutorial
 * servers wait for Enter; rlab gives an empty stdin), or with -x exits at
 * once, or with -forever serves on until it is interrupted (SIGINT: it says
 * "interrupted"). */
#include <arpa/inet.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void interrupted(int sig) {
	(void)sig;
	write(1, "interrupted\n", 12);
	_exit(0);
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: server PORT [-x]\n");
		return 2;
	}
	int s = socket(AF_INET6, SOCK_STREAM, 0), one = 1, zero = 0;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(atoi(argv[1])), .sin6_addr = in6addr_any};
	if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 1)) {
		perror("bind");
		return 1;
	}
	printf("listening on %s\n", argv[1]);
	fflush(stdout);
	int c = accept(s, NULL, NULL);
	char buf[256];
	ssize_t n = read(c, buf, sizeof buf - 1);
	if (n < 0) n = 0;
	buf[n] = 0;
	dprintf(c, "pong %s", buf);
	close(c);
	printf("served %zd bytes\n", n);
	fflush(stdout);
	if (argc > 2 && strcmp(argv[2], "-x") == 0) return 0;
	if (argc > 2 && strcmp(argv[2], "-forever") == 0) {
		signal(SIGINT, interrupted);
		for (;;) pause();
	}
	while (read(0, buf, sizeof buf) > 0) /* wait for Enter, like a tutorial */
		;
	return 0;
}
