"""
The client code of JumpServer's API documentation, as users copy it
(requests + httpsig), run against sidegate by test/jumpserver-clients.test.ts.
Usage: jumpserver_docs.py <base url> <username> <password> <key id> <key secret> <org id>
Prints one JSON object: the status and body of each call.
"""
import datetime
import json
import sys

import requests
from httpsig.requests_auth import HTTPSignatureAuth

jms_url, username, password, key_id, secret, org_id = sys.argv[1:7]
out = {}


def get_auth(KeyID, SecretID, algorithm='hmac-sha256'):
    signature_headers = ['(request-target)', 'accept', 'date']
    return HTTPSignatureAuth(key_id=KeyID, secret=SecretID, algorithm=algorithm, headers=signature_headers)


def get_user_info(jms_url, auth, date):
    url = jms_url + '/api/v1/users/profile/'
    headers = {
        'Accept': 'application/json',
        'X-JMS-ORG': org_id,
        'Date': date,
    }
    response = requests.get(url, auth=auth, headers=headers)
    return {'status': response.status_code, 'body': response.json()}


gmt_form = '%a, %d %b %Y %H:%M:%S GMT'
now = datetime.datetime.utcnow().strftime(gmt_form)
# the documented example, with the current date
out['signature_now'] = get_user_info(jms_url, get_auth(key_id, secret), now)
# the documented example with its fixed date
out['signature_2014'] = get_user_info(jms_url, get_auth(key_id, secret), 'Mon, 17 Feb 2014 06:11:05 GMT')
# hmac-sha512, which JumpServer also accepts
out['signature_sha512'] = get_user_info(jms_url, get_auth(key_id, secret, 'hmac-sha512'), now)


def get_token(jms_url, username, password, path='/api/v1/authentication/auth/'):
    url = jms_url + path
    query_args = {'username': username, 'password': password}
    response = requests.post(url, data=query_args)
    return response.status_code, json.loads(response.text)


status, body = get_token(jms_url, username, password, '/api/v1/authentication/tokens/')
out['token'] = {'status': status, 'keys': sorted(body.keys())}
headers = {'Authorization': 'Bearer ' + body.get('token', ''), 'X-JMS-ORG': org_id}
# the SDKs cache the token and reuse it until shortly before date_expired
out['bearer_uses'] = [requests.get(jms_url + '/api/v1/users/profile/', headers=headers).status_code for _ in range(3)]
status, body = get_token(jms_url, username, 'wrong-password')
out['wrong_password'] = {'status': status, 'body': body}

print(json.dumps(out))
