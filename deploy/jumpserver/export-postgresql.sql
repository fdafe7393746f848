-- JumpServer (PostgreSQL) -> sidegate import file, one JSON object per line:
--   psql -At -d jumpserver -f export-postgresql.sql > jumpserver.jsonl
--   sidegate import --from jumpserver.jsonl --dry-run     # then without --dry-run
-- Tables and columns of JumpServer 3.x/4.x (users_user, orgs_organization,
-- rbac_rolebinding, users_usergroup, users_user_groups, authentication_accesskey,
-- authentication_privatetoken); check them against your version. The file holds
-- password hashes and secrets: keep it where the secret key is kept, and delete
-- it after the import.
SELECT json_build_object('type', 'org', 'id', id, 'name', name) FROM orgs_organization
  WHERE id NOT IN ('00000000-0000-0000-0000-000000000000', '00000000-0000-0000-0000-000000000004');  -- root and system: built into sidegate
SELECT json_build_object('type', 'user', 'id', u.id, 'username', u.username, 'name', u.name, 'email', u.email,
  'password', u.password, 'is_active', u.is_active,
  'is_superuser', EXISTS (SELECT 1 FROM rbac_rolebinding b WHERE b.user_id = u.id AND b.scope = 'system'
                          AND b.role_id = '00000000-0000-0000-0000-000000000001'))
  FROM users_user u;
-- OrgAdmin and OrgUser; sidegate has no OrgAuditor or custom roles
SELECT json_build_object('type', 'membership', 'user_id', user_id, 'org', org_id, 'role', role_id) FROM rbac_rolebinding
  WHERE scope = 'org' AND role_id IN ('00000000-0000-0000-0000-000000000005', '00000000-0000-0000-0000-000000000007');
-- user groups (UserGroup: id, name, org_id; a name is unique per org) and their members (the m2m User.groups)
SELECT json_build_object('type', 'group', 'id', id, 'name', name, 'org', org_id) FROM users_usergroup
  WHERE org_id NOT IN ('00000000-0000-0000-0000-000000000000', '00000000-0000-0000-0000-000000000004');
SELECT json_build_object('type', 'group_member', 'user_id', m.user_id, 'group', m.usergroup_id) FROM users_user_groups m
  JOIN users_usergroup g ON g.id = m.usergroup_id WHERE g.org_id NOT IN ('00000000-0000-0000-0000-000000000000', '00000000-0000-0000-0000-000000000004');
SELECT json_build_object('type', 'access_key', 'user_id', user_id, 'id', id, 'secret', secret, 'is_active', is_active)
  FROM authentication_accesskey;
SELECT json_build_object('type', 'private_token', 'user_id', user_id, 'key', key) FROM authentication_privatetoken;
