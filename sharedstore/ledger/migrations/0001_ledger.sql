-- The spend ledger: the durable record of every priced call.
-- Money is nano-USD (1 USD = 1e9) in BIGINT; prices are nano-USD per
-- million tokens. Scopes are 'team', 'api_key', 'user'; periods 'day'
-- (key YYYYMMDD) and 'month' (key YYYYMM), in UTC, of the call's start.

-- One row per settled call, keyed by the filter's hold id so a replayed or
-- retried settlement inserts nothing.
CREATE TABLE inference_records (
    id                    text        PRIMARY KEY,
    team                  text        NOT NULL CHECK (team <> ''),
    api_key_id            text        NOT NULL DEFAULT '',
    user_id               text        NOT NULL DEFAULT '',
    model                 text        NOT NULL,
    input_tokens          bigint      NOT NULL CHECK (input_tokens >= 0),
    cached_input_tokens   bigint      NOT NULL CHECK (cached_input_tokens >= 0),
    cache_write_tokens    bigint      NOT NULL CHECK (cache_write_tokens >= 0),
    cache_write_1h_tokens bigint      NOT NULL CHECK (cache_write_1h_tokens >= 0),
    output_tokens         bigint      NOT NULL CHECK (output_tokens >= 0),
    call_start            timestamptz NOT NULL,
    -- The periods of call_start, fixed at insert so every later query and
    -- the worker agree on them whatever the session time zone.
    day_key               integer     NOT NULL,
    month_key             integer     NOT NULL,
    estimated_cost        bigint      NOT NULL CHECK (estimated_cost >= 0),
    received_at           timestamptz NOT NULL DEFAULT now(),
    processed             boolean     NOT NULL DEFAULT false,
    processed_at          timestamptz,
    error_count           integer     NOT NULL DEFAULT 0,
    last_error            text,
    CHECK (processed = (processed_at IS NOT NULL))
);

-- The worker's batch: a team's unprocessed records in call-start order.
CREATE INDEX inference_records_pending
    ON inference_records (team, call_start, id) WHERE NOT processed;
-- Pending estimates of a period (the cache refresh).
CREATE INDEX inference_records_pending_month
    ON inference_records (team, month_key) WHERE NOT processed;

-- Versioned price lists: a list replaces the whole table from its
-- effective_from on; a call is priced with the latest list whose
-- effective_from is at or before its start.
CREATE TABLE price_lists (
    id             bigserial   PRIMARY KEY,
    effective_from timestamptz NOT NULL UNIQUE,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- One model's entry of a list; is_default marks the entry that prices
-- every model without its own (model is then '').
CREATE TABLE prices (
    list_id                 bigint  NOT NULL REFERENCES price_lists (id) ON DELETE CASCADE,
    model                   text    NOT NULL,
    is_default              boolean NOT NULL DEFAULT false,
    input                   bigint  NOT NULL CHECK (input >= 0),
    cached_input            bigint  NOT NULL CHECK (cached_input >= 0),
    cache_write             bigint  NOT NULL CHECK (cache_write >= 0),
    cache_write_1h          bigint  NOT NULL CHECK (cache_write_1h >= 0),
    output                  bigint  NOT NULL CHECK (output >= 0),
    above_input_tokens      bigint  NOT NULL DEFAULT 0 CHECK (above_input_tokens >= 0),
    tier_input              bigint  NOT NULL DEFAULT 0 CHECK (tier_input >= 0),
    tier_cached_input       bigint  NOT NULL DEFAULT 0 CHECK (tier_cached_input >= 0),
    tier_cache_write        bigint  NOT NULL DEFAULT 0 CHECK (tier_cache_write >= 0),
    tier_cache_write_1h     bigint  NOT NULL DEFAULT 0 CHECK (tier_cache_write_1h >= 0),
    tier_output             bigint  NOT NULL DEFAULT 0 CHECK (tier_output >= 0),
    per_request             bigint  NOT NULL DEFAULT 0 CHECK (per_request >= 0),
    PRIMARY KEY (list_id, model),
    CHECK (is_default = (model = ''))
);

-- The exact charge of a record, one per record, written in the same
-- transaction that adds it to the aggregates and marks the record processed.
CREATE TABLE usage_charges (
    record_id      text        PRIMARY KEY REFERENCES inference_records (id),
    team           text        NOT NULL,
    charge         bigint      NOT NULL CHECK (charge >= 0),
    estimated_cost bigint      NOT NULL,
    price_list_id  bigint      NOT NULL REFERENCES price_lists (id),
    charged_at     timestamptz NOT NULL DEFAULT now()
);

-- The confirmed spend of every scope and period a call touched, whether or
-- not a limit exists, so a limit added mid-period sees the spend so far.
CREATE TABLE spend_aggregates (
    team       text        NOT NULL,
    scope      text        NOT NULL CHECK (scope IN ('team', 'api_key', 'user')),
    scope_id   text        NOT NULL CHECK (scope_id <> ''),
    period     text        NOT NULL CHECK (period IN ('day', 'month')),
    period_key integer     NOT NULL,
    amount     bigint      NOT NULL DEFAULT 0 CHECK (amount >= 0),
    charges    bigint      NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, scope, scope_id, period, period_key),
    CHECK (NOT (scope = 'team' AND period = 'day'))
);

-- A team's spend limits; a team-scope limit's scope_id is the team.
CREATE TABLE spend_policies (
    team       text        NOT NULL,
    scope      text        NOT NULL CHECK (scope IN ('team', 'api_key', 'user')),
    scope_id   text        NOT NULL CHECK (scope_id <> ''),
    period     text        NOT NULL CHECK (period IN ('day', 'month')),
    limit_nano bigint      NOT NULL CHECK (limit_nano >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, scope, scope_id, period),
    CHECK (NOT (scope = 'team' AND period = 'day')),
    CHECK (scope <> 'team' OR scope_id = team)
);

-- A team's account balance; a team without a row is not limited by one.
CREATE TABLE team_balances (
    team       text        PRIMARY KEY,
    balance    bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Top-ups, idempotent by the caller's id: a retried top-up inserts nothing.
CREATE TABLE balance_topups (
    id         text        PRIMARY KEY,
    team       text        NOT NULL REFERENCES team_balances (team),
    amount     bigint      NOT NULL CHECK (amount > 0),
    created_at timestamptz NOT NULL DEFAULT now()
);
