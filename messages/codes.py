"""Stable codes for the infos, warnings and errors of status messages (and dead-letter reasons).

Consumers match on these strings; never rename one.
"""

# --- message intake (dead-letter reasons and failure statuses) ---
NOT_JSON = "not_json"  # the body is not UTF-8 JSON
SCHEMA_INVALID = "schema_invalid"  # the body does not validate against its JSON Schema
UNKNOWN_TYPE = "unknown_type"  # no worker here handles this harvest/export type
UNKNOWN_ROUTING_KEY = "unknown_routing_key"  # the routing key is not one swath understands
BAD_REQUEST = "bad_request"  # the message is valid JSON but asks for something impossible
PATH_OUTSIDE_DATA_ROOT = "path_outside_data_root"  # a path in the message escapes SWATH_DATA_ROOT
OBJECT_DIFFERS = "object_differs"  # a stored WARC (or its copy) is not what the WARC index records: size or SHA-1
PATH_OUTSIDE_STORE = "path_outside_store"  # an s3:// WARC path is not in the configured store's bucket and prefix

# --- harvesting ---
TOKEN_NOT_FOUND = "token_not_found"  # a seed's account/blog/endpoint does not exist
TOKEN_SUSPENDED = "token_suspended"  # a seed's account is suspended
TOKEN_UNAUTHORIZED = "token_unauthorized"  # a seed's account is protected/private
UNAUTHORIZED = "unauthorized"  # the credentials were refused (401/403)
RATE_LIMITED = "rate_limited"  # the platform asked us to wait (429); we waited and went on
HARVEST_RESUMED = "harvest_resumed"  # a redelivered start resumed an interrupted harvest
HARVEST_STOPPED = "harvest_stopped"  # harvest.stop (a cancel) ended a REST harvest at its next request
WARC_RECOVERED = "warc_recovered"  # a leftover .open WARC was cut at its last good record and closed
REMOTE_ERROR = "remote_error"  # the remote kept failing (5xx, connection errors) after retries
BAD_RESPONSE = "bad_response"  # a remote response could not be parsed or was refused
RESPONSE_TOO_LARGE = "response_too_large"  # a remote response exceeded SWATH_MAX_RESPONSE_BYTES
LINE_TOO_LONG = "line_too_long"  # a stream line passed SWATH_STREAM_MAX_LINE_BYTES; stream ended, all before it kept
ITEM_FAILED = "item_failed"  # one remote item could not be processed; the harvest went on
# a redirect not followed: it would carry credentials to another origin, leave http(s), loop or pass the hop limit
REDIRECT_REFUSED = "redirect_refused"
# a response took longer than SWATH_HTTP_DEADLINE seconds in all (a slow drip); its connection was closed
DEADLINE_EXCEEDED = "deadline_exceeded"
PAGINATION_LOOP = "pagination_loop"  # a next page or resumptionToken led back to one already served; listing stopped
OAI_ERROR = "oai_error"  # an OAI-PMH endpoint answered with an OAI error; its OAI code starts the message
DRY_RUN = "dry_run"  # a dry run (options.dryrun): what would have been harvested; nothing was written
LOCAL_FAULT = "local_fault"  # swath's own side failed (writing a WARC); a start delivered again resumes the harvest
DISK_FULL = "disk_full"  # a write under the data root met a full disk or quota (ENOSPC/EDQUOT); rerun once freed
STORAGE_UNAVAILABLE = "storage_unavailable"  # the object store did not answer or failed (5xx) after retries; WARC kept
STORAGE_REFUSED = "storage_refused"  # the object store refused us (credentials, permissions, no bucket); WARC kept
REPLICA_LAG = "replica_lag"  # a stored WARC was not copied to the replica; announced anyway, `swath storage replicate`
# a write under the data root was refused (read-only, permissions), or the data root cannot be made at start
DATA_ROOT_UNWRITABLE = "data_root_unwritable"
LISTEN_FAILED = "listen_failed"  # a serving command (dashboard, metashare serve) cannot listen on its --host/--port
# a newer runner of this harvest took its claim (fencing token): this runner's late upload or state commit refused
CLAIM_FENCED = "claim_fenced"
# SWATH_STORAGE_URL is object storage, so claims and state need PostgreSQL (SWATH_DB_URL), which is not set or failed
CLAIM_STORE_UNAVAILABLE = "claim_store_unavailable"
STATE_UNREADABLE = "state_unreadable"  # a collection's swath-state.json is not a JSON object (edited, planted): not run
IO_ERROR = "io_error"  # the disk failed a write under the data root (EIO); complete files kept, run again to resume
FREE_SPACE_LOW = "free_space_low"  # the data root has less free space than SWATH_MIN_FREE_BYTES: not started/stopped
UNKNOWN_ERROR = "unknown_error"  # anything unexpected; the message says what
# a request carrying credentials to an origin other than the harvest's API root and seed URLs; not sent
CREDENTIAL_ORIGIN_REFUSED = "credential_origin_refused"
# (info) the remote cannot report deletions to this (incremental) harvest; the message says how to find them
DELETIONS_UNSEEN = "deletions_unseen"
# an interrupted listing could not go on where it stopped (e.g. an expired resumptionToken) and started again
LISTING_RESTARTED = "listing_restarted"
# a start for a harvest id that already has a final status: nothing harvested (use a new id to harvest again)
ALREADY_FINISHED = "already_finished"

# --- exporting ---
UNSUPPORTED_EXPORT_FORMAT = "unsupported_export_format"  # export format not known
WARC_MISSING = "warc_missing"  # an indexed WARC file is no longer on disk
WARC_TRUNCATED = "warc_truncated"  # a WARC ends mid-record; the good records were exported
CELLS_TRUNCATED = "cells_truncated"  # an export format's cell limit cut values (XLSX: 32,767 characters); counted
DUPLICATE_JSON_KEYS = "duplicate_json_keys"  # a response repeated a JSON key; exported with each key's last value
NO_WARCS = "no_warcs"  # no WARC of the collection (or none at all, for seeds) under the data root: nothing to export
# the export read its WARCs but wrote no item (none of its type, none by the seeds' uids, none in the asked dates)
EXPORT_EMPTY = "export_empty"
STREAM_LINE_CUT = "stream_line_cut"  # a stream's last line was cut mid-item (connection or harvest ended); skipped

# --- exporting: what was written, what could not be read, WACZ ---
EXPORT_TABLES = "export_tables"  # which table(s) and files an export wrote, with item counts
ITEM_UNREADABLE = "item_unreadable"  # a body did not decode or was not JSON: fails the export unless skip_unreadable
WACZ_FAILED = "wacz_failed"  # `swath wacz` made no package: no WARC under the path, a name twice, or the tool refused

# --- broker and store connections (CLI errors and worker log lines; each message says what to do) ---
BROKER_AUTH_REFUSED = "broker_auth_refused"  # RabbitMQ refused the user/password in SWATH_AMQP_URL
BROKER_UNREACHABLE = "broker_unreachable"  # nothing answered AMQP at SWATH_AMQP_URL's host and port (or DNS failed)
BROKER_VHOST_MISSING = "broker_vhost_missing"  # the virtual host named in SWATH_AMQP_URL does not exist
BROKER_PERMISSION = "broker_permission"  # the user may not use the vhost, or configure/write/read what swath needs
DEAD_LETTER_NOT_FOUND = "dead_letter_not_found"  # no message with that id is in the dead-letter queue
DATABASE_AUTH_REFUSED = "database_auth_refused"  # the database refused the user/password in SWATH_DB_URL
DATABASE_MISSING = "database_missing"  # the database named in SWATH_DB_URL does not exist on its server
DATABASE_UNREACHABLE = "database_unreachable"  # no database server answers at SWATH_DB_URL, or SQLite cannot open it

# --- requester (sources, launches, schedules) ---
SOURCE_NOT_VALIDATED = "source_not_validated"  # a harvest source runs only after `swath harvest validate` accepted it
SOURCE_BUSY = "source_busy"  # the source has a queued or running job already; runs of one source never overlap
CREDENTIAL_MISSING = "credential_missing"  # a source's credential reference (env var or stored value) has no value
NO_WORKER = "no_worker"  # no queue is bound for the start message's routing key: no worker for that platform
BAD_SCHEDULE = "bad_schedule"  # a cron expression or interval that cannot be parsed
# a credential value was to be stored or read but neither SWATH_SECRET_KEY nor SWATH_SECRET_KEY_FILE is set
CREDENTIAL_KEY_MISSING = "credential_key_missing"
# the store's key is malformed, its key file is unsafe (group/world-readable), or it does not decrypt a stored value
CREDENTIAL_KEY_INVALID = "credential_key_invalid"

# --- WARC index (exports that read only what they select) ---
WARC_INDEX_SCAN = "warc_index_scan"  # no WARC index answered for this export: it listed the data root for its WARCs
WARC_INDEX_UNAVAILABLE = "warc_index_unavailable"  # the store holding the WARC index could not be read; listed instead
WARC_UNINDEXED = "warc_unindexed"  # WARCs on disk in the selected collections' folders with no index entry; read too
SFM_WARC_MISSING = "sfm_warc_missing"  # `swath sfm import`: a WARC sfm-ui recorded is not on disk; not indexed
SFM_WARC_MISMATCH = "sfm_warc_mismatch"  # `swath sfm import`: a WARC's size or sha1 is not sfm-ui's; not indexed
SFM_IMPORTED = "sfm_imported"  # info on a job `swath sfm import` brought over: SFM's harvest, with its status there

# --- streams (Mastodon's, Bluesky's Jetstream) ---
STREAM_RECONNECTED = "stream_reconnected"  # a stream ended and was reopened; posts made meanwhile came from a timeline

# --- the codes a platform adds: each declaration's `codes` (swath.core.platforms), copied here ---
# >>> platform codes: written by `python -m swath.generate`, do not edit
# --- bluesky ---
JETSTREAM_RECONNECTED = "jetstream_reconnected"  # a Jetstream connection ended; reconnected at the last event's cursor
EVENTS_DROPPED = "events_dropped"  # stream events sent again at or before the cursor (replays): not recorded, counted
EVENT_FUTURE_DATED = "event_future_dated"  # a stream event dated past this machine's clock: recorded, not the cursor
# --- kiel ---
KIEL_BAD_BRANCHES = "kiel_bad_branches"  # branches.xml is not well-formed or holds an XPath that does not compile
KIEL_BAD_RECORD = "kiel_bad_record"  # an AMF file or record could not be parsed or has no id; skipped
KIEL_OBJECT_FAILED = "kiel_object_failed"  # an object could not be fetched; stored as status 000 with an empty body
KIEL_REDIRECT_LOOP = "kiel_redirect_loop"  # a redirect chain came back to a URL already in it or was too long
KIEL_BAD_TERMINATION = "kiel_bad_termination"  # the termination strategy file is invalid; nothing was pruned
KIEL_NO_RECORD = "kiel_no_record"  # `swath kiel notes`: the archive has no record directory for that id
KIEL_BAD_NOTE = "kiel_bad_note"  # a line of a record's notes file is not a note (edited by hand); skipped
# --- mastodon ---
ACCOUNT_MOVED = "account_moved"  # the account says it moved; its new address is the seed's token update
ACCOUNT_GONE = "account_gone"  # the instance answered 410 Gone for the account (suspended or deleted)
INSTANCE_UNREACHABLE = "instance_unreachable"  # an instance failed (connection errors, 5xx, deadline) after retries
SEARCH_UNAVAILABLE = "search_unavailable"  # a post search without an access token: most instances then find nothing
CREDENTIAL_UNUSED = "credential_unused"  # an instance's access token was not sent: the seed does not name it as a URL
# --- metashare ---
SYNC_PROTOCOL_UNSUPPORTED = "sync_protocol_unsupported"  # the node answered 501 or without "Sync-Protocol: 1.0"
BAD_INVENTORY_ENTRY = "bad_inventory_entry"  # an inventory key is not a 64-hex storage id or its value not a 32-hex MD5
CHECKSUM_MISMATCH = "checksum_mismatch"  # an LR's recomputed MD5 differs from the node's inventory; LR not stored
LR_OTHER_NODE = "lr_other_node"  # an LR id already held from another node: refused (an LR belongs to its node)
INVALID_LR = "invalid_lr"  # an LR's metadata.xml or storage-global.json is malformed; LR not stored
BAD_ZIP = "bad_zip"  # a response that must be a ZIP file is not a readable one
ZIP_UNSAFE_NAME = "zip_unsafe_name"  # a ZIP entry name is absolute or climbs with ".." (zip-slip); refused unread
ZIP_TOO_LARGE = "zip_too_large"  # a ZIP inflates past the size limit (ZIP bomb); refused
ZIP_UNEXPECTED_ENTRIES = "zip_unexpected_entries"  # a ZIP lacks a required entry, has extra ones or the wrong order
# --- xesam ---
XESAM_NO_BUS = "xesam_no_bus"  # DBUS_SESSION_BUS_ADDRESS is unset or the bus cannot be reached
XESAM_TARGET_UNREACHABLE = "xesam_target_unreachable"  # the seed's target is not on the bus or refused ListRecords
XESAM_FULL_DUMP = "xesam_full_dump"  # the target sends a full dump; this target's earlier payloads are superseded
XESAM_OUT_OF_ORDER = "xesam_out_of_order"  # payloads older than ones already received; stored, but the target is faulty
XESAM_BAD_PAYLOAD = "xesam_bad_payload"  # an UpdateRecords call with the wrong signature or an invalid payload; refused
XESAM_INVALIDATED = "xesam_invalidated"  # the target invalidated the crawler before the harvest was done
XESAM_INCOMPLETE = "xesam_incomplete"  # the target went silent before sending everything older than the start
XESAM_STOPPED = "xesam_stopped"  # harvest.stop ended the crawl: what was received so far is stored, counts given
# <<< platform codes

# --- web application (swath web) ---
WEB_LOGIN_FAILED = "web_login_failed"  # a login with a wrong user name or password
WEB_LOGIN_THROTTLED = "web_login_throttled"  # too many failed logins for this name or address; wait and retry
WEB_CSRF = "web_csrf"  # a form posted without this session's CSRF token (another site, or an old page)
WEB_TOO_LARGE = "web_too_large"  # a request body over its route's cap (SWATH_WEB_*_MAX_BYTES), refused unread
WEB_BUSY = "web_busy"  # every login hashing or preview slot is taken; try again in a moment
WEB_PREVIEW_DEADLINE = "web_preview_deadline"  # a preview ran past SWATH_WEB_PREVIEW_SECONDS and was cut
WEB_NOT_FOUND = "web_not_found"  # no such page, or one in a collection set the user is not a member of
WEB_STILL_RUNNING = "web_still_running"  # a delete of a collection, set or export whose harvest or export still runs
WEB_URL_INVALID = "web_url_invalid"  # SWATH_WEB_URL is not http(s)://host[:port][/prefix]; nothing starts

# --- quorum queues and broker clusters ---
DELIVERY_LIMIT = "delivery_limit"  # the broker dead-lettered a message delivered SWATH_DELIVERY_LIMIT times unacked
DEAD_LETTERED = "dead_lettered"  # the broker dead-lettered a message for another reason (x-first-death-reason says)
BROKER_QUEUE_MISMATCH = "broker_queue_mismatch"  # a queue exists with other arguments (classic?): setup --migrate

# --- web preview (dry-run items) ---
DRY_RUN_ITEM = "dry_run_item"  # one of the first items a dry run would harvest: id, title, last_modified, url (JSON)

# --- an SFM site as it is (SWATH_REQUESTER=sfm, SWATH_PLATFORMS; docs/migrating-from-sfm.md) ---
SFM_API_UNAVAILABLE = "sfm_api_unavailable"  # sfm-ui's /api/v1/warcs/ (SWATH_SFM_API_URL) failed or answered nonsense
# infos on swath's own machinery that sfm-ui would show its users; left out of statuses with SWATH_REQUESTER=sfm
SWATH_INTERNAL_INFOS = frozenset({WARC_INDEX_SCAN, WARC_UNINDEXED})
API_RETIRED = "api_retired"  # a harvest type whose platform API is gone (SFM 2.x v1 Twitter, Weibo); says what to use
SFM_SCHEMA_MISSING = "sfm_schema_missing"  # `swath sfm import`: the database named has no sfm-ui tables (ui_collection)

# --- start-up mistakes (a CLI line or worker log line each, saying what to do) ---
BROKER_URL_INVALID = "broker_url_invalid"  # SWATH_AMQP_URL is not an amqp:// or amqps:// URL, or does not parse
DATABASE_DRIVER_MISSING = "database_driver_missing"  # SWATH_DB_URL names a database driver that is not installed
# a credential of a harvest.start is still the YOUR_<NAME> placeholder of `swath harvest example`; nothing sent
CREDENTIAL_PLACEHOLDER = "credential_placeholder"

# --- swath dashboard ---
# the dashboard would listen beyond this machine with no SWATH_DASHBOARD_TOKEN: every group's work open to all
DASHBOARD_TOKEN_MISSING = "dashboard_token_missing"

# --- notifications and operations (issue 32; swath/notify.py, docs/web.md "Notifications") ---
MAIL_FAILED = "mail_failed"  # a notification e-mail could not be sent (SMTP refused, unreachable, login); logged only
EMAIL_INVALID = "email_invalid"  # the notification settings' e-mail address is not one address (name@host)
