-- The operators' decisions on releases (docs/operations.md, "Roll a release out"):
-- one append-only table that is both the state and the audit log. Every
-- `poller rollout`, `poller withdraw` and `poller minimum` inserts one row;
-- nothing is updated or deleted. The current decisions of an app are its newest
-- rollout row, the newest withdraw row of each tag, and its newest minimum row
-- (pkg/mysql, decisions.go). Times are UTC. The limits match pkg/mysql's
-- (validate.go); the CHECKs keep hand-written rows honest too.

-- +goose Up
CREATE TABLE craft_release_decisions (
  id          BIGINT UNSIGNED  NOT NULL AUTO_INCREMENT PRIMARY KEY,
  app         VARCHAR(100)     NOT NULL,
  action      VARCHAR(16)      NOT NULL,
  tag         VARCHAR(255)     NOT NULL DEFAULT '',
  percent     TINYINT UNSIGNED NULL,
  version     VARCHAR(256)     NOT NULL DEFAULT '',
  reason      VARCHAR(1000)    NOT NULL DEFAULT '',
  decided_by  VARCHAR(100)     NOT NULL,
  created_at  DATETIME(3)      NOT NULL,
  KEY craft_release_decisions_app (app, id),
  CONSTRAINT craft_release_decisions_action CHECK (action IN ('rollout', 'rollout_end', 'withdraw', 'restore', 'minimum', 'minimum_clear')),
  CONSTRAINT craft_release_decisions_percent CHECK ((action = 'rollout') = (percent IS NOT NULL) AND (percent IS NULL OR percent <= 100)),
  CONSTRAINT craft_release_decisions_names CHECK (app <> '' AND decided_by <> '')
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE craft_release_decisions;
