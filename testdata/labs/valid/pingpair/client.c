/* The client of server.c: connects to ADDR PORT, sends "ping", prints what
 * comes back and "rtt in X s (Y MiB/s)"; exits 1 when told -fail. */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: client ADDR PORT [-fail]\n");
		return 2;
	}
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	if (getaddrinfo(argv[1], argv[2], &hints, &ai)) {
		fprintf(stderr, "cannot resolve %s\n", argv[1]);
		return 1;
	}
	int s = socket(ai->ai_family, SOCK_STREAM, 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (connect(s, ai->ai_addr, ai->ai_addrlen)) {
		perror("connect");
		return 1;
	}
	write(s, "ping\n", 5);
	char buf[256];
	ssize_t n = read(s, buf, sizeof buf - 1);
	if (n < 0) n = 0;
	buf[n] = 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("got %s", buf);
	printf("rtt in %.6f s (%.3f MiB/s)\n", secs, n / secs / 1048576);
	if (argc > 3 && strcmp(argv[3], "-fail") == 0) {
		fprintf(stderr, "client: failing as asked\n");
		return 1;
	}
	return 0;
}
