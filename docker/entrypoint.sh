#!/bin/sh
# The container's entrypoint: the broker, which applies TRIO_BROKER_* environment variables
# over its config file as it does wherever it starts (TRIO_BROKER_NUM_IO_THREADS=16 ->
# num.io.threads=16; see trio_broker/server/config/env.py). Arguments (the image's CMD)
# follow, so an --override still wins. exec: the broker is the process tini forwards SIGTERM to.
set -e
exec trio-broker "$@"
