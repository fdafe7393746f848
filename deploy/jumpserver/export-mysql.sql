-- JumpServer (MySQL / MariaDB) -> sidegate import file, one JSON object per line:
--   mysql -N -B jumpserver < export-mysql.sql > jumpserver.jsonl
--   sidegate import --from jumpserver.jsonl --dry-run     # then without --dry-run
-- MySQL keeps Django's UUIDs as 32 hex digits and booleans as 1/0: the import
-- accepts both. Tables and columns of JumpServer 3.x/4.x (user groups: users_usergroup,
-- and the users' m2m users_user_groups); check them against
-- your version. The file holds password hashes and secrets: keep it where the
-- secret key is kept, and delete it after the import.
SELECT JSON_OBJECT('type', 'org', 'id', id, 'name', name) FROM orgs_organization
  WHERE id NOT IN ('00000000000000000000000000000000', '00000000000000000000000000000004');  -- root and system: built into sidegate
SELECT JSON_OBJECT('type', 'user', 'id', u.id, 'username', u.username, 'name', u.name, 'email', u.email,
  'password', u.password, 'is_active', u.is_active,
  'is_superuser', EXISTS (SELECT 1 FROM rbac_rolebinding b WHERE b.user_id = u.id AND b.scope = 'system'
                          AND b.role_id = '00000000000000000000000000000001'))
  FROM users_user u;
-- OrgAdmin and OrgUser; sidegate has no OrgAuditor or custom roles
SELECT JSON_OBJECT('type', 'membership', 'user_id', user_id, 'org', org_id, 'role', role_id) FROM rbac_rolebinding
  WHERE scope = 'org' AND role_id IN ('00000000000000000000000000000005', '00000000000000000000000000000007');
-- user groups (UserGroup: id, name, org_id; a name is unique per org) and their members (the m2m User.groups)
SELECT JSON_OBJECT('type', 'group', 'id', id, 'name', name, 'org', org_id) FROM users_usergroup
  WHERE org_id NOT IN ('00000000000000000000000000000000', '00000000000000000000000000000004');
SELECT JSON_OBJECT('type', 'group_member', 'user_id', m.user_id, 'group', m.usergroup_id) FROM users_user_groups m
  JOIN users_usergroup g ON g.id = m.usergroup_id WHERE g.org_id NOT IN ('00000000000000000000000000000000', '00000000000000000000000000000004');
SELECT JSON_OBJECT('type', 'access_key', 'user_id', user_id, 'id', id, 'secret', secret, 'is_active', is_active)
  FROM authentication_accesskey;
SELECT JSON_OBJECT('type', 'private_token', 'user_id', user_id, 'key', `key`) FROM authentication_privatetoken;
