# Sourced by .ci/run: installs Redis and PostgreSQL from Debian's packages
# when missing, starts a private server of each on a free loopback port in
# a temporary directory, and exports the addresses the tests of the nested
# modules stores/redis and stores/postgres read. stop_store_servers stops
# them and removes their directories; .ci/run calls it on exit.

store_tmp=""
store_redis_pid=""
store_pg_bin=""
store_pg_user=""

# free_port prints a loopback TCP port nothing listens on, from 20000 up.
free_port() {
	local p=$((20000 + RANDOM % 20000))
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do
		p=$((p + 1))
	done
	echo "$p"
}

# as_pg_user runs a command as the user that owns the PostgreSQL data
# (initdb and postgres refuse to run as root).
as_pg_user() {
	if [ -n "$store_pg_user" ]; then
		runuser -u "$store_pg_user" -- "$@"
	else
		"$@"
	fi
}

install_store_servers() {
	local missing=()
	command -v redis-server >/dev/null || missing+=(redis-server)
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
	if [ ${#missing[@]} -gt 0 ]; then
		echo "installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
	store_pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
}

start_store_servers() {
	install_store_servers
	store_tmp=$(mktemp -d /tmp/pruneguard-stores.XXXXXX)
	chmod 755 "$store_tmp"

	# Redis, with the append-only file fsynced before every reply: the
	# setting under which its Store keeps the durability contract.
	local redis_port
	redis_port=$(free_port)
	mkdir "$store_tmp/redis"
	redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$store_tmp/redis" \
		--appendonly yes --appendfsync always --save '' \
		--daemonize yes --pidfile "$store_tmp/redis/redis.pid" --logfile "$store_tmp/redis/log"
	local up=""
	for _ in $(seq 100); do
		if [ -s "$store_tmp/redis/redis.pid" ] && (exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null; then
			up=1
			break
		fi
		sleep 0.1
	done
	if [ -z "$up" ]; then
		echo "redis did not start:"; cat "$store_tmp/redis/log"; return 1
	fi
	store_redis_pid=$(cat "$store_tmp/redis/redis.pid")
	export PRUNEGUARD_TEST_REDIS_ADDR="127.0.0.1:$redis_port"

	# PostgreSQL, as the postgres user (made by the package) when run as
	# root, trusting local connections to its own loopback port only.
	if [ "$(id -u)" = 0 ]; then
		store_pg_user=postgres
		id -u "$store_pg_user" >/dev/null 2>&1 || useradd --system --no-create-home "$store_pg_user"
	fi
	local pg_port
	pg_port=$(free_port)
	mkdir "$store_tmp/pg"
	if [ -n "$store_pg_user" ]; then
		chown "$store_pg_user" "$store_tmp/pg"
	fi
	as_pg_user "$store_pg_bin/initdb" -D "$store_tmp/pg/data" -U pruneguard --auth=trust \
		-E UTF8 --no-locale >"$store_tmp/initdb.log"
	as_pg_user "$store_pg_bin/pg_ctl" -D "$store_tmp/pg/data" -l "$store_tmp/pg/log" -w -s \
		-o "-c listen_addresses=127.0.0.1 -p $pg_port -k $store_tmp/pg -c fsync=on" start
	export PRUNEGUARD_TEST_POSTGRES_URL="postgres://pruneguard@127.0.0.1:$pg_port/postgres?sslmode=disable"
}

stop_store_servers() {
	if [ -z "$store_tmp" ]; then
		return 0
	fi
	if [ -n "$store_redis_pid" ]; then
		kill "$store_redis_pid" 2>/dev/null || true
	fi
	if [ -f "$store_tmp/pg/data/postmaster.pid" ]; then
		as_pg_user "$store_pg_bin/pg_ctl" -D "$store_tmp/pg/data" -m fast -w -s stop || true
	fi
	rm -rf "$store_tmp"
	store_tmp=""
}
