server: rping -s -a 10.99.0.1 -C 5 -v
client: rping -c -a 10.99.0.1 -C 5 -v
