# Sourced by .ci/run and examples/fleet/run.sh (make fleet): ensure_postgres
# makes the newest installed PostgreSQL's "main" cluster run and answer on
# 127.0.0.1:5432 for the postgres user with trust authentication, creating
# the cluster when a fresh install came without one. It needs the
# postgresql package installed and root (pg_ctlcluster, the hba file).
ensure_postgres() {
	local ver status hba
	ver=$(ls /usr/lib/postgresql | sort -V | tail -1)
	# A fresh install may come without a cluster (or not started: package
	# installs in containers do not start services).
	if ! pg_lsclusters -h 2>/dev/null | awk '{print $1" "$2}' | grep -qx "$ver main"; then
		pg_createcluster "$ver" main >/dev/null
	fi
	status=$(pg_lsclusters -h | awk -v v="$ver" '$1 == v && $2 == "main" {print $4}')
	if [ "$status" != online ]; then
		pg_ctlcluster --skip-systemctl-redirect "$ver" main start 2>/dev/null || pg_ctlcluster "$ver" main start
	fi
	for _ in $(seq 1 60); do
		pg_isready -q -h 127.0.0.1 -p 5432 && break
		sleep 0.5
	done
	pg_isready -h 127.0.0.1 -p 5432
	if ! psql -w -h 127.0.0.1 -U postgres -d postgres -Atc 'SELECT 1' >/dev/null 2>&1; then
		hba=$(su postgres -c "psql -Atc 'SHOW hba_file'")
		sed -i '1i host all postgres 127.0.0.1/32 trust' "$hba"
		pg_ctlcluster --skip-systemctl-redirect "$ver" main reload 2>/dev/null || pg_ctlcluster "$ver" main reload
		sleep 1
		psql -w -h 127.0.0.1 -U postgres -d postgres -Atc 'SELECT 1' >/dev/null
	fi
}
