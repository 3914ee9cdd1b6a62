#!/usr/bin/env node
// Compiles paycore's Solidity sources with the solc pinned in package.json and writes one
// artifact per deployable contract: abi, bytecode, deployedBytecode, the compiler version and
// the exact settings.
//
// Why pinned and committed: a deposit address is CREATE2(wallet, index, keccak256(forwarder
// init code)). Any change of compiler, settings or source changes every address paycore hands
// out, so the bytecode is frozen in src/paycore/contracts/artifacts/ and a test recompiles and
// compares byte for byte. Runs offline: the solc npm package ships its own soljson.
//
//   node scripts/compile_contracts.mjs              # rewrite the committed artifacts
//   node scripts/compile_contracts.mjs --out DIR    # write them elsewhere (the test does)

import { createRequire } from 'node:module'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const solc = require('solc')

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const SOURCES_DIR = path.join(ROOT, 'src', 'paycore', 'contracts')
const DEFAULT_OUT = path.join(SOURCES_DIR, 'artifacts')

// The contracts that get an artifact, by source unit; interfaces and the internal library
// are compiled into them and need none.
const CONTRACTS = [
  ['PaycoreFactory.sol', 'PaycoreFactory'],
  ['PaycoreWallet.sol', 'PaycoreWallet'],
  ['PaycoreForwarder.sol', 'PaycoreForwarder'],
  ['PaycoreStaking.sol', 'PaycoreStaking'],
  ['PaycoreBatchPay.sol', 'PaycoreBatchPay'],
  ['test/TestToken.sol', 'TestToken'],
  ['test/MockAggregator.sol', 'MockAggregator'],
]

// Fixed for good: they are part of every address. `paris` leaves PUSH0 out so the same bytecode
// deploys on chains that lag behind Ethereum's forks; no CBOR metadata, so editing a comment
// does not move the addresses.
const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'paris',
  metadata: { appendCBOR: false },
  outputSelection: {
    '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] },
  },
}

function parseArgs(argv) {
  let out = DEFAULT_OUT
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--out' && i + 1 < argv.length) out = path.resolve(argv[++i])
    else throw new Error(`unknown argument ${argv[i]}; usage: compile_contracts.mjs [--out DIR]`)
  }
  return { out }
}

/** Every .sol file under the contracts folder, keyed by its path relative to it (with /). */
function readSources(dir, prefix = '') {
  const sources = {}
  for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const full = path.join(dir, entry.name)
    const unit = prefix + entry.name
    if (entry.isDirectory() && entry.name !== 'artifacts') Object.assign(sources, readSources(full, unit + '/'))
    else if (entry.isFile() && entry.name.endsWith('.sol')) sources[unit] = { content: fs.readFileSync(full, 'utf8') }
  }
  return sources
}

function main() {
  const { out } = parseArgs(process.argv.slice(2))
  const input = { language: 'Solidity', sources: readSources(SOURCES_DIR), settings: SETTINGS }
  const output = JSON.parse(solc.compile(JSON.stringify(input)))

  // Warnings fail too: the sources are small enough to keep clean.
  const problems = (output.errors ?? []).filter((e) => e.severity === 'error' || e.type === 'Warning')
  if (problems.length) {
    for (const p of problems) console.error(p.formattedMessage)
    process.exit(1)
  }

  fs.mkdirSync(out, { recursive: true })
  const version = solc.version()
  for (const [sourceName, contractName] of CONTRACTS) {
    const compiled = output.contracts?.[sourceName]?.[contractName]
    if (!compiled) throw new Error(`solc produced no ${contractName} in ${sourceName}`)
    const artifact = {
      contractName,
      sourceName,
      compiler: { name: 'solc', version, settings: SETTINGS },
      abi: compiled.abi,
      bytecode: '0x' + compiled.evm.bytecode.object,
      deployedBytecode: '0x' + compiled.evm.deployedBytecode.object,
    }
    fs.writeFileSync(path.join(out, `${contractName}.json`), JSON.stringify(artifact, null, 2) + '\n')
  }
  console.log(`compiled ${CONTRACTS.length} contracts with solc ${version} into ${path.relative(ROOT, out) || out}`)
}

main()
