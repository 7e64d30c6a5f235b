server: ib_send_bw -d rxe_eth1 -x 1 -F --report_gbits -n 500
client: ib_send_bw -d rxe_eth1 -x 1 -F --report_gbits -n 500 10.99.0.1
