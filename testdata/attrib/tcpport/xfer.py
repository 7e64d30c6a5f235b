# Two TCP transfers at once (a parallel group of tcp workloads) on ports
# 40001 and 40002, and a short exchange on 18515 (perftest's out-of-band
# port), between 127.0.0.1 ends; each server reads until EOF.
import socket, threading, time
def serve(port, ready):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(1); ready.set()
    c, _ = s.accept()
    while c.recv(65536): pass
    c.close(); s.close()
def send(port, n):
    c = socket.create_connection(("127.0.0.1", port))
    buf = b"x" * 16384
    while n > 0:
        c.sendall(buf[:min(n, len(buf))]); n -= len(buf)
        time.sleep(0.002)
    c.close()
ths = []
for port, n in ((18515, 64),):
    r = threading.Event(); t = threading.Thread(target=serve, args=(port, r)); t.start(); r.wait(); send(port, n); t.join()
time.sleep(0.2)
for port, n in ((40001, 200000), (40002, 300000)):
    r = threading.Event(); t = threading.Thread(target=serve, args=(port, r)); t.start(); r.wait(); ths.append(t)
cl = [threading.Thread(target=send, args=(p, n)) for p, n in ((40001, 200000), (40002, 300000))]
for t in cl: t.start()
for t in cl + ths: t.join()
