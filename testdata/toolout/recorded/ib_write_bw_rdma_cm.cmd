server: ib_write_bw -d rxe_eth1 -x 1 -F --report_gbits -R -n 1000
client: ib_write_bw -d rxe_eth1 -x 1 -F --report_gbits -R -n 1000 10.99.0.1
