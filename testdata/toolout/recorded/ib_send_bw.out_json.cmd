server: ib_send_bw -d rxe_eth1 -x 1 -F --report_gbits -n 500 --out_json --out_json_file=/tmp/ib_send_bw.out_json.server.json
client: ib_send_bw -d rxe_eth1 -x 1 -F --report_gbits -n 500 --out_json --out_json_file=/tmp/ib_send_bw.out_json.client.json 10.99.0.1
