//go:build !wasip1

package ledger

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one embedded schema step, named NNNN_what.sql and applied in
// the order of its number.
type Migration struct {
	Version int
	Name    string
	SQL     string
	// Checksum is the SHA-256 of SQL: an applied step whose file changed
	// afterwards is an error, because the database no longer matches the
	// repository's schema and re-running it could not fix that.
	Checksum string
}

// Migrations lists the embedded schema steps in order.
func Migrations() ([]Migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	out := make([]Migration, 0, len(names))
	seen := map[int]string{}
	for _, path := range names {
		name := strings.TrimPrefix(path, "migrations/")
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("ledger: migration %q is not named NNNN_what.sql", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("ledger: migrations %q and %q share version %d", prev, name, v)
		}
		seen[v] = name
		body, err := migrationFiles.ReadFile(path)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(body)
		out = append(out, Migration{Version: v, Name: name, SQL: string(body), Checksum: hex.EncodeToString(sum[:])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// migrateLock is the advisory lock key migrations run under, so two
// processes migrating one database at once apply each step once.
const migrateLock = 7_473_845_170_001

// Migrate applies the embedded steps the database lacks, in order, in one
// transaction under an advisory lock, and records each in
// ledger_migrations. Applying it again changes nothing. It reports the
// versions it applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (applied []int, err error) {
	steps, err := Migrations()
	if err != nil {
		return nil, err
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrateLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS ledger_migrations (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			checksum   text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT version, checksum FROM ledger_migrations")
		if err != nil {
			return err
		}
		done := map[int]string{}
		for rows.Next() {
			var v int
			var sum string
			if err := rows.Scan(&v, &sum); err != nil {
				return err
			}
			done[v] = sum
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, m := range steps {
			if sum, ok := done[m.Version]; ok {
				if sum != m.Checksum {
					return fmt.Errorf("ledger: migration %s was applied with different contents", m.Name)
				}
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("ledger: migration %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO ledger_migrations (version, name, checksum) VALUES ($1, $2, $3)",
				m.Version, m.Name, m.Checksum); err != nil {
				return err
			}
			applied = append(applied, m.Version)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}
