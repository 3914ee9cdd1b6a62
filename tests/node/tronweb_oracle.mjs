// An independent Tron implementation for paycore's Tron tests: TronWeb v6, the SDK TronLink
// and most Tron dapps are built on.
//
// Reads {"tasks": [...]} as JSON on stdin and writes one JSON array of results on stdout.
// Each task does with TronWeb's own code what paycore does with its own: base58 addresses,
// TVM CREATE2 addresses, transaction protobufs and their ids, signed transactions, ABI call
// data and TIP-191 (signMessageV2) message signatures. The Python side compares.
import { TronWeb, utils } from "tronweb";

const { keccak256, concat, toUtf8Bytes, sha256 } = utils.ethersUtils;
const hex = (text) => text.replace(/^0x/, "").toLowerCase();
const bytes = (text) => "0x" + hex(text); // ethers' BytesLike
const array = (text) => Uint8Array.from(utils.code.hexStr2byteArray(hex(text)));

// keccak256(0x41 ++ deployer ++ salt ++ codeHash)[12:], the TVM's CREATE2, as base58.
function create2(deployerBase58, saltHex, codeHashHex) {
  const deployer = hex(TronWeb.address.toHex(deployerBase58)).slice(2);
  const digest = keccak256(concat([bytes("41"), bytes(deployer), bytes(saltHex), bytes(codeHashHex)]));
  return TronWeb.address.fromHex("41" + hex(digest).slice(24));
}

function selector(signature) {
  return hex(keccak256(toUtf8Bytes(signature))).slice(0, 8);
}

function run(task) {
  switch (task.op) {
    case "address": {
      // Both directions, and TronWeb's own validity check.
      const base58 = TronWeb.address.fromHex(task.hex41);
      return { base58, hex41: hex(TronWeb.address.toHex(base58)), valid: TronWeb.isAddress(base58) };
    }
    case "valid":
      return { valid: TronWeb.isAddress(task.address) };
    case "keyAddress":
      return { address: TronWeb.address.fromPrivateKey(hex(task.privateKey)) };
    case "depositAddresses": {
      // The owner's wallet: CREATE2(factory, bytes32(owner), keccak256(wallet code ++
      // abi.encode(owner))); its forwarder i: CREATE2(wallet, bytes32(i), keccak256(code)).
      const ownerWord = hex(utils.abi.encodeParams(["address"], [task.owner]));
      const walletCodeHash = keccak256(concat([bytes(task.walletCode), bytes(ownerWord)]));
      const wallet = create2(task.factory, ownerWord, walletCodeHash);
      const forwarderHash = keccak256(bytes(task.forwarderCode));
      const deposits = task.indexes.map((i) =>
        create2(wallet, BigInt(i).toString(16).padStart(64, "0"), forwarderHash),
      );
      return { wallet, deposits };
    }
    case "calldataV2": {
      // What TronWeb's triggerSmartContract encodes for a dapp passing a function's ABI:
      // base58 addresses, in arrays too, turned into their 20 bytes by TronWeb itself.
      const params = hex(utils.abi.encodeParamsV2ByABI(task.abi, task.values));
      return { data: selector(task.signature) + params };
    }
    case "calldata": {
      // Addresses go in as base58, as a dapp passes them to TronWeb.
      const params = hex(utils.abi.encodeParams(task.types, task.values));
      return { data: selector(task.signature) + params };
    }
    case "transaction": {
      // The protobuf TronWeb builds from the JSON, the id it computes, whether it agrees
      // with the hex beside it, what its deserializer reads back, and the bytes of the
      // transaction signed by TronWeb (what broadcasthex takes).
      const tx = task.transaction;
      const pb = utils.transaction.txJsonToPb(tx);
      const rawDataHex = hex(utils.transaction.txPbToRawDataHex(pb));
      const txID = hex(utils.transaction.txPbToTxID(pb));
      const decoded = utils.deserializeTx.deserializeTransaction(
        tx.raw_data.contract[0].type,
        tx.raw_data_hex,
      );
      const signed = utils.crypto.signTransaction(hex(task.privateKey), { ...tx });
      for (const signature of signed.signature) pb.addSignature(array(signature));
      return {
        rawDataHex,
        txID,
        check: utils.transaction.txCheck(tx),
        sha256: hex(sha256(bytes(tx.raw_data_hex))),
        decoded,
        signature: signed.signature,
        signedHex: utils.code.byteArray2hexStr(pb.serializeBinary()).toLowerCase(),
      };
    }
    case "signMessage": {
      const signature = utils.message.signMessage(task.message, hex(task.privateKey));
      return {
        signature,
        hash: hex(utils.message.hashMessage(task.message)),
        signer: utils.message.verifyMessage(task.message, signature),
      };
    }
    case "verifyMessage":
      return { signer: utils.message.verifyMessage(task.message, task.signature) };
    default:
      throw new Error(`unknown op ${task.op}`);
  }
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { tasks } = JSON.parse(input);
process.stdout.write(JSON.stringify(tasks.map(run), (_key, value) =>
  typeof value === "bigint" ? value.toString() : value,
));
