"""
What five real JumpServer clients send, each reproduced from its source (no
code of theirs is copied here: each function sends the same requests, with the
same paths, headers, signed header lists, Date handling, token caching and
retries, through the same libraries: requests and httpsig, Debian's
python3-requests and python3-httpsig). Run by test/proxies/jumpserver-compat.test.ts.

- jumpserver_sdk: O-Jiangweidong/jumpserver-sdk-python, commit c5e19ab (2025-03-03),
  jms_client/session.py and client.py: SessionClient.request
- fit2cloud: fit2cloud-sdk/jumpserver-sdk-py 0.1.0, commit 20630b3 (2026-07-06),
  jumpserver/auth.py (PasswordAuth, SignatureAuth) and client.py (_do_with_retry)
- cc_jumpserver: houm01/cc-jumpserver 0.0.1, commit ada4a76 (2024-01-06), cc_jumpserver/client.py
- jms_pam_legacy: jumpserver/pam-clients' integration-application examples 1.0.0
  (2025-02-11): GET /api/v1/accounts/integration-applications/account-secret/
  signed over (request-target) accept date x-jms-org
- jms_cli: kaptnemo/jms-cli, commit 69748b0, src/jms/core/auth.py (_api_login,
  _form_login) and core/http.py (RESTClient._request)

(jumpserver/pam-clients' SDK 1.0.1 is reproduced in the test itself: it is a
Node SDK.)

Usage: jumpserver_clients.py <base url> <json: username, password, key_id, secret, private_token, org, stale_age, wait>
Prints one JSON object: per client and case, the statuses (and codes) it got.
"""
import datetime
import json
import sys
import time

import requests
from httpsig.requests_auth import HTTPSignatureAuth

base = sys.argv[1]
a = json.loads(sys.argv[2])
GMT = '%a, %d %b %Y %H:%M:%S GMT'
out = {}


def code(r):
    try:
        body = r.json()
    except ValueError:
        return r.status_code
    if r.status_code >= 400 and isinstance(body, dict) and 'code' in body:
        return '%d %s' % (r.status_code, body['code'])
    return r.status_code


def same_second():
    """Two requests in one second of Date, as a loop or a retry makes them: start just after a second begins."""
    t = time.time()
    time.sleep(1.02 - (t - int(t)))


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


# ---- O-Jiangweidong/jumpserver-sdk-python
def jumpserver_sdk():
    res = {}
    # Password: Session.get_token posts json with its User-Agent and keeps "<keyword> <token>" (a LazyProperty: once per session)
    r = requests.post(f'{base}/api/v1/authentication/tokens/', json={'username': a['username'], 'password': a['password']},
                      verify=False, headers={'User-Agent': 'JumpServer-SDK-Python'})
    body = r.json()
    token = f"{body.get('keyword')} {body.get('token')}"

    def request(url, auth=None, authorization=None):
        headers = {'X-JMS-ORG': a['org'], 'Accept': 'application/json', 'Date': utcnow().strftime(GMT)}
        if authorization:
            headers['Authorization'] = authorization
        # requests.get(..., json={}): the SDK sends json=data or {} on every method
        return requests.get(f'{base}/{url}', auth=auth, verify=False, headers=headers, json={})

    res['password_token_reused'] = [code(request('api/v1/users/users/', authorization=token)) for _ in range(3)]
    # AccessKey: HTTPSignatureAuth over (request-target) accept date, a Date per request
    ak = HTTPSignatureAuth(key_id=a['key_id'], secret=a['secret'], algorithm='hmac-sha256', headers=['(request-target)', 'accept', 'date'])
    same_second()
    res['access_key_same_get_twice'] = [code(request('api/v1/users/users/', auth=ak)) for _ in range(2)]
    return res


# ---- fit2cloud-sdk/jumpserver-sdk-py
class Fit2cloudClient:
    """Client._request and _do_with_retry: one prepared request, sent again as it is after a 401 (PasswordAuth) or a 5xx/429."""

    def __init__(self, auth):
        self.session = requests.Session()
        self.session.headers.update({'Accept': 'application/json', 'Content-Type': 'application/json',
                                     'X-JMS-ORG': a['org'], 'User-Agent': 'jumpserver-sdk-py/0.1.0'})
        self.auth = auth
        self.sent = 0

    def get(self, path):
        prepped = self.session.prepare_request(requests.Request(method='GET', url=base + path))
        self.auth(prepped)
        reauth = False
        for attempt in range(4):
            self.sent += 1
            resp = self.session.send(prepped, timeout=30)
            if resp.status_code == 401 and not reauth and isinstance(self.auth, PasswordAuth):
                # invalidate() drops the cached token, but the prepared request keeps the old one
                self.auth.token = None
                reauth = True
                continue
            if resp.status_code not in (408, 429, 500, 502, 503, 504) or attempt == 3:
                return resp
            time.sleep(0.5 * (2 ** attempt))
        return resp


class PasswordAuth:
    def __init__(self):
        self.token = None
        self.session = requests.Session()
        self.fetched = 0

    def __call__(self, request):
        if self.token is None:
            resp = self.session.post(base + '/api/v1/authentication/auth/', json={'username': a['username'], 'password': a['password']},
                                     headers={'Content-Type': 'application/json', 'Accept': 'application/json'}, timeout=30)
            resp.raise_for_status()
            self.token = resp.json()['token']
            self.fetched += 1
        request.headers['Authorization'] = f'Bearer {self.token}'


class SignatureAuth:
    def __init__(self):
        self.httpsig = HTTPSignatureAuth(key_id=a['key_id'], secret=a['secret'], algorithm='hmac-sha256', headers=['(request-target)', 'date'])

    def __call__(self, request):
        if 'Date' not in request.headers:
            request.headers['Date'] = utcnow().strftime(GMT)
        self.httpsig(request)


def fit2cloud():
    res = {}
    auth = PasswordAuth()
    c = Fit2cloudClient(auth)
    res['password_token_reused'] = [code(c.get('/api/v1/users/profile/')) for _ in range(3)]
    res['password_requests_sent'] = c.sent
    s = Fit2cloudClient(SignatureAuth())
    same_second()
    res['access_key_same_get_twice'] = [code(s.get('/api/v1/users/users/')) for _ in range(2)]
    return res


# ---- houm01/cc-jumpserver
class CcClient:
    """Client.__init__ builds its headers once: its Date is the client object's creation time."""

    def __init__(self, age=0):
        self.headers = {
            'accept': 'application/json',
            'Content-Type': 'application/json',
            'Authorization': 'Token ' + a['private_token'],
            'X-JMS-ORG': '00000000-0000-0000-0000-000000000002',
            'Date': (utcnow() - datetime.timedelta(seconds=age)).strftime(GMT),
        }
        self.auth = HTTPSignatureAuth(key_id=a['key_id'], secret=a['secret'], algorithm='hmac-sha256', headers=['(request-target)', 'accept', 'date'])

    def get_user_all(self):
        return requests.get(base + '/api/v1/users/users/', auth=self.auth, headers=self.headers)

    def get_node_all(self):
        return requests.get(base + '/api/v1/assets/nodes/', headers=self.headers, auth=self.auth)


def cc_jumpserver():
    res = {}
    c = CcClient()
    # every call on a path carries the same signature: the Date never changes
    res['fresh_client'] = [code(c.get_user_all()), code(c.get_node_all()), code(c.get_user_all())]
    # a client object kept longer than five minutes: its Date is as old
    old = CcClient(age=a['stale_age'])
    res['client_older_than_skew'] = [code(old.get_user_all()), code(old.get_user_all())]
    if a.get('wait'):
        # the same fresh client, used again once its Date has aged past the skew (a gateway with a short skew)
        time.sleep(a['wait'])
        res['fresh_client_later'] = [code(c.get_user_all()), code(c.get_node_all())]
    return res


# ---- jumpserver/pam-clients 1.0.0 integration-application example
def jms_pam_legacy():
    def get_secret():
        date = utcnow().strftime(GMT)
        auth = HTTPSignatureAuth(key_id=a['key_id'], secret=a['secret'], algorithm='hmac-sha256',
                                 headers=['(request-target)', 'accept', 'date', 'x-jms-org'])
        return requests.get(base + '/api/v1/accounts/integration-applications/account-secret/',
                            params={'asset': 'ubuntu_docker', 'account': 'root'}, auth=auth,
                            headers={'Accept': 'application/json', 'X-JMS-ORG': a['org'], 'Date': date, 'X-Source': 'jms-pam'})
    same_second()
    return {'access_key_same_get_twice': [code(get_secret()) for _ in range(2)]}


# ---- kaptnemo/jms-cli
def jms_cli():
    res = {}
    s = requests.Session()
    r = s.post(base + '/api/v1/authentication/auth/', json={'username': a['username'], 'password': a['password']},
               headers={'Content-Type': 'application/json'}, timeout=15)
    token = r.json().get('token', '') if r.status_code in (200, 201) else ''
    res['api_login'] = r.status_code
    # _form_login: GET the Django login page to seed the CSRF cookie, then post the form with Referer
    page = s.get(base + '/core/auth/login/', timeout=15)
    csrf = s.cookies.get('jms_csrftoken') or ''
    form = s.post(base + '/core/auth/login/', data={'username': a['username'], 'password': a['password'], 'csrfmiddlewaretoken': csrf},
                  headers={'Referer': base + '/core/auth/login/'}, allow_redirects=True, timeout=15)
    res['form_login'] = {'page': page.status_code, 'post': [h.status_code for h in form.history] + [form.status_code],
                         'session_cookie': bool(s.cookies.get('jms_sessionid'))}
    csrf = s.cookies.get('jms_csrftoken') or csrf

    def api_get(path):
        h = {'Content-Type': 'application/json'}
        if token:
            h['Authorization'] = f'Bearer {token}'
        if csrf:
            h['X-CSRFToken'] = csrf
        return s.request('GET', base + path, headers=h, timeout=15)
    res['rest_token_reused'] = [code(api_get('/api/v1/users/users/')) for _ in range(3)]
    return res


for name, fn in [('jumpserver_sdk', jumpserver_sdk), ('fit2cloud', fit2cloud), ('cc_jumpserver', cc_jumpserver),
                 ('jms_pam_legacy', jms_pam_legacy), ('jms_cli', jms_cli)]:
    try:
        out[name] = fn()
    except Exception as e:  # a client that fails outright says how
        out[name] = {'error': '%s: %s' % (type(e).__name__, e)}
print(json.dumps(out))
